package database

import (
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

func TestPlan(t *testing.T) {
	utf8 := &mysql.Schema{CharacterSet: "utf8mb4", Collation: "utf8mb4_general_ci"}
	for _, tc := range []struct {
		name  string
		want  mysql.Schema
		have  *mysql.Schema
		event *events.Event
		query string
	}{
		{"absent", mysql.Schema{CharacterSet: "utf8mb4"}, nil, &events.DatabaseCreated, "CREATE DATABASE IF NOT EXISTS `shop` CHARACTER SET utf8mb4"},
		{"server default accepted", mysql.Schema{}, utf8, nil, ""},
		{"same charset, default collation", mysql.Schema{CharacterSet: "utf8mb4"}, utf8, nil, ""},
		{"collation changed", mysql.Schema{Collation: "utf8mb4_bin"}, utf8, &events.DatabaseUpdated, "ALTER DATABASE `shop` COLLATE utf8mb4_bin"},
	} {
		s, ev, err := plan("shop", tc.want, tc.have)
		if err != nil || ev != tc.event || s.Query != tc.query {
			t.Errorf("%s: %q %v %v; want %q %v", tc.name, s.Query, ev, err, tc.query, tc.event)
		}
	}
}
