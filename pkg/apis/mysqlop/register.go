// Package mysqlop holds the API group name shared by every version of the mysqlop.io API.
package mysqlop

// GroupName is the API group of every mysqlop kind.
const GroupName = "mysqlop.io"
