// Package sqlobject holds what the controllers of objects inside a cluster's database
// (MySQLUser, MySQLDatabase) share: the connection to the cluster's primary, with the reasons
// it can be unavailable, and the rule for which of several objects naming the same account or
// schema manages it.
//
// Account and schema changes are made on the primary only and reach the replicas through
// replication, so a change is never lost in a failover that loses no acknowledged write.
package sqlobject
