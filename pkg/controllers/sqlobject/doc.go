// Package sqlobject holds what the controllers of objects bound to a cluster share: the worker
// loop and event handlers (used by every controller but Cluster's), and, for the objects
// inside a cluster's database (MySQLUser, MySQLDatabase), the connection to the cluster's
// primary with the reasons it can be unavailable, the Ready condition and the finalizer
// helpers.
//
// Account and schema changes are made on the primary only and reach the replicas through
// replication, so a change is never lost in a failover that loses no acknowledged write.
package sqlobject
