// Package mysql is the flavor-aware SQL the operator speaks to MySQL 8.0/8.4 and MariaDB
// 10.6+/11.x: GTID set math, instance status, replication and semi-sync setup, waiting for a
// GTID position, read-only fencing, killing client connections, and users.
//
// Statements carry values as ? arguments. Connections are opened with client-side
// interpolation (interpolateParams), which escapes values correctly for the server's SQL mode,
// so that statements the server cannot prepare (CHANGE MASTER, CREATE USER) still never embed
// a password by string concatenation. Statements with arguments are never logged.
//
// This package imports nothing from Kubernetes.
package mysql

import (
	"fmt"
	"strings"
)

// Flavor is the server family.
type Flavor string

const (
	// MySQL is Oracle MySQL 8.0 / 8.4.
	MySQL Flavor = "mysql"
	// MariaDB is MariaDB 10.6+ / 11.x.
	MariaDB Flavor = "mariadb"
)

// Statement is one SQL statement and its arguments.
type Statement struct {
	Query string
	Args  []any
	// Sensitive marks a statement whose arguments hold a secret: its errors keep the
	// server's error number but not its message, which can quote the statement.
	Sensitive bool
}

// Source is where a replica replicates from.
type Source struct {
	Host     string
	Port     int
	User     string
	Password string
	// ConnectRetry is the seconds between reconnection attempts of the IO thread.
	ConnectRetry int
	// TLSCAFile, when set, is the path (on the replica) of the CA bundle the source's
	// certificate must verify under, for Host: replication then runs over TLS only.
	TLSCAFile string
}

// ChangeSource points a stopped replica at src with GTID auto-positioning. On MariaDB it uses
// current_pos: a demoted primary's own transactions are in its binlog position but not in its
// replica position, so slave_pos would make it fetch them again. (Replicas are read-only, so
// current_pos holds no local writes; an errant replica is never repointed silently.)
func (f Flavor) ChangeSource(src Source) Statement {
	retry := src.ConnectRetry
	if retry <= 0 {
		retry = 5
	}
	// CHANGE keeps every option it does not name: the TLS options are always named, so a
	// source without TLS never inherits an earlier source's.
	ssl := 0
	if src.TLSCAFile != "" {
		ssl = 1
	}
	p := f.pick("SOURCE_", "MASTER_")
	tls := fmt.Sprintf(", %[1]sSSL = %[2]d, %[1]sSSL_CA = ?, %[1]sSSL_VERIFY_SERVER_CERT = %[2]d", p, ssl)
	args := []any{src.Host, src.Port, src.User, src.Password, retry, src.TLSCAFile}
	if f == MariaDB {
		return Statement{
			Query: "CHANGE MASTER TO MASTER_HOST = ?, MASTER_PORT = ?, MASTER_USER = ?, MASTER_PASSWORD = ?, " +
				"MASTER_USE_GTID = current_pos, MASTER_CONNECT_RETRY = ?" + tls,
			Args: args, Sensitive: true,
		}
	}
	// GET_SOURCE_PUBLIC_KEY matters only without TLS: caching_sha2_password then fetches the
	// source's RSA key to send the password.
	return Statement{
		Query: "CHANGE REPLICATION SOURCE TO SOURCE_HOST = ?, SOURCE_PORT = ?, SOURCE_USER = ?, SOURCE_PASSWORD = ?, " +
			"SOURCE_AUTO_POSITION = 1, GET_SOURCE_PUBLIC_KEY = 1, SOURCE_CONNECT_RETRY = ?" + tls,
		Args: args, Sensitive: true,
	}
}

// ReloadTLS makes the server read its certificate, key and CA files again, for new
// connections; established ones keep their session. It writes nothing to the binary log: a
// plain FLUSH is logged on MariaDB, and a transaction of a replica's own would make it errant
// (ALTER INSTANCE is never logged).
func (f Flavor) ReloadTLS() string {
	return f.pick("ALTER INSTANCE RELOAD TLS", "FLUSH NO_WRITE_TO_BINLOG SSL")
}

func (f Flavor) pick(mysql, mariadb string) string {
	if f == MariaDB {
		return mariadb
	}
	return mysql
}

// StartReplica starts both replication threads.
func (f Flavor) StartReplica() string { return f.pick("START REPLICA", "START SLAVE") }

// StopReplica stops both replication threads.
func (f Flavor) StopReplica() string { return f.pick("STOP REPLICA", "STOP SLAVE") }

// StopReplicaIO stops receiving from the source; applying what was received goes on.
func (f Flavor) StopReplicaIO() string {
	return f.pick("STOP REPLICA IO_THREAD", "STOP SLAVE IO_THREAD")
}

// ResetReplicaAll forgets the replication source (after a promotion).
func (f Flavor) ResetReplicaAll() string { return f.pick("RESET REPLICA ALL", "RESET SLAVE ALL") }

// ReplicaStatus shows the replication threads' state.
func (f Flavor) ReplicaStatus() string {
	return f.pick("SHOW REPLICA STATUS", "SHOW SLAVE STATUS")
}

// executedColumn, purgedColumn and readOnlyColumns are what ExecutedQuery, ReadOnlyQuery and
// StateQuery select, written once.
func (f Flavor) executedColumn() string {
	return f.pick("@@GLOBAL.gtid_executed", "@@GLOBAL.gtid_binlog_pos")
}

func (f Flavor) purgedColumn() string { return f.pick("@@GLOBAL.gtid_purged", "''") }

func (f Flavor) readOnlyColumns() string {
	return f.pick("@@GLOBAL.read_only, @@GLOBAL.super_read_only", "@@GLOBAL.read_only, 0")
}

// ExecutedQuery selects the executed GTIDs. MariaDB's gtid_binlog_pos includes replicated
// transactions because the operator sets log_slave_updates.
func (f Flavor) ExecutedQuery() string { return "SELECT " + f.executedColumn() }

// StateQuery selects, in one round trip (a clustering round probes every member every 500 ms),
// server_id, version, the executed GTIDs (ExecutedQuery), the purged GTIDs (empty on MariaDB,
// which has no such variable), read_only and super_read_only (ReadOnlyQuery).
func (f Flavor) StateQuery() string {
	return "SELECT @@GLOBAL.server_id, @@GLOBAL.version, " + f.executedColumn() + ", " + f.purgedColumn() + ", " + f.readOnlyColumns()
}

// ReadOnlyQuery selects read_only and super_read_only (always 0 on MariaDB, which has no
// super_read_only: there read_only also binds users with SUPER, since 10.11 unless they hold
// READ ONLY ADMIN).
func (f Flavor) ReadOnlyQuery() string { return "SELECT " + f.readOnlyColumns() }

// SetReadOnly makes the instance read-only (on) or writable.
func (f Flavor) SetReadOnly(on bool) string {
	switch {
	case f == MariaDB && on:
		return "SET GLOBAL read_only = ON"
	case f == MariaDB:
		return "SET GLOBAL read_only = OFF"
	case on:
		return "SET GLOBAL super_read_only = ON"
	default:
		return "SET GLOBAL super_read_only = OFF, GLOBAL read_only = OFF"
	}
}

// SemiSyncNeverFallBackMillis is the semi-sync acknowledgement timeout: the largest the servers
// accept (about 49 days), so a primary without an acknowledging replica blocks commits instead
// of silently falling back to asynchronous replication.
const SemiSyncNeverFallBackMillis = 4294967295

// SemiSyncSource turns loss-less semi-sync on (AFTER_SYNC: a transaction is visible to others
// only once a replica acknowledged it) or off on a primary. waitCount applies to MySQL only;
// MariaDB always waits for one replica.
func (f Flavor) SemiSyncSource(on bool, waitCount int) Statement {
	if !on {
		return Statement{Query: f.pick("SET GLOBAL rpl_semi_sync_source_enabled = OFF", "SET GLOBAL rpl_semi_sync_master_enabled = OFF")}
	}
	if f == MariaDB {
		return Statement{
			Query: "SET GLOBAL rpl_semi_sync_master_wait_point = 'AFTER_SYNC', GLOBAL rpl_semi_sync_master_timeout = ?, " +
				"GLOBAL rpl_semi_sync_master_enabled = ON",
			Args: []any{SemiSyncNeverFallBackMillis},
		}
	}
	if waitCount < 1 {
		waitCount = 1
	}
	return Statement{
		Query: "SET GLOBAL rpl_semi_sync_source_wait_point = 'AFTER_SYNC', GLOBAL rpl_semi_sync_source_timeout = ?, " +
			"GLOBAL rpl_semi_sync_source_wait_for_replica_count = ?, GLOBAL rpl_semi_sync_source_enabled = ON",
		Args: []any{SemiSyncNeverFallBackMillis, waitCount},
	}
}

// SemiSyncReplica turns acknowledgements on or off on a replica; it takes effect when the IO
// thread (re)starts.
func (f Flavor) SemiSyncReplica(on bool) string {
	v := "OFF"
	if on {
		v = "ON"
	}
	return f.pick("SET GLOBAL rpl_semi_sync_replica_enabled = ", "SET GLOBAL rpl_semi_sync_slave_enabled = ") + v
}

// SemiSyncStatusQuery shows whether the primary currently waits for acknowledgements.
func (f Flavor) SemiSyncStatusQuery() string {
	return f.pick("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_source_status'", "SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_status'")
}

// ClientConnections lists connections that are neither replication nor system threads nor
// the current one, excluding the given users (the operator's own) and connections still
// authenticating. Those show no user yet ('unauthenticated user'), so the operator's own new
// connections would be among them: a fence that ended them ended the connection it was about
// to set read_only through, every time under load (TestFenceIsNotBlockedBySemiSyncWaitsOnMariaDB
// on busy cores). A connection that is not logged in has no transaction to end, and one that
// logs in later is ended by the fence's next round or finds the server read-only.
func ClientConnections(exceptUsers ...string) Statement {
	q := "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() " +
		"AND COMMAND NOT IN ('Binlog Dump', 'Binlog Dump GTID', 'Daemon') " +
		"AND USER NOT IN ('system user', 'event_scheduler', 'unauthenticated user'"
	args := []any{}
	for _, u := range exceptUsers {
		q += ", ?"
		args = append(args, u)
	}
	return Statement{Query: q + ")", Args: args}
}

// KillConnection ends one connection.
func KillConnection(id uint64) string { return fmt.Sprintf("KILL CONNECTION %d", id) }

// CreateUser creates user@host with password unless it exists.
func CreateUser(user, host, password string) Statement {
	return Statement{Query: "CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY ?", Args: []any{user, host, password}, Sensitive: true}
}

// AlterUserPassword sets the password of user@host.
func AlterUserPassword(user, host, password string) Statement {
	return Statement{Query: "ALTER USER ?@? IDENTIFIED BY ?", Args: []any{user, host, password}, Sensitive: true}
}

// ResetToGTID makes a server whose data was just restored from a physical backup start its
// GTID history at gtid, the position the backup was taken at: its binary logs are reset (the
// backup holds none) and the GTID state set, so that replicas restored from the same backup
// continue from the same point and new transactions follow on in order. serverVersion picks
// MySQL's statement (RESET MASTER was renamed in 8.2). On MariaDB both the binlog state (what
// the server writes next) and the replica position (where it replicates from) are set.
func (f Flavor) ResetToGTID(serverVersion, gtid string) []Statement {
	if f == MariaDB {
		out := []Statement{{Query: "RESET MASTER"}}
		if gtid != "" {
			out = append(out, Statement{Query: "SET GLOBAL gtid_binlog_state = ?", Args: []any{gtid}},
				Statement{Query: "SET GLOBAL gtid_slave_pos = ?", Args: []any{gtid}})
		}
		return out
	}
	reset := "RESET BINARY LOGS AND GTIDS"
	var major, minor int
	if _, err := fmt.Sscanf(serverVersion, "%d.%d", &major, &minor); err == nil && (major < 8 || major == 8 && minor < 2) {
		reset = "RESET MASTER"
	}
	out := []Statement{{Query: reset}}
	if gtid != "" {
		out = append(out, Statement{Query: "SET GLOBAL gtid_purged = ?", Args: []any{gtid}})
	}
	return out
}

// QuoteIdent quotes a schema object name with backticks.
func QuoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

func quoteIdentOrStar(name string) string {
	if name == "*" || name == "" {
		return "*"
	}
	return QuoteIdent(name)
}

// Internal accounts, created by the agent's init step on every member.
const (
	// OperatorUser is the account the operator and the agent administer the server with.
	OperatorUser = "mysqlop"
	// ReplicationUser is the account replicas connect to their source with.
	ReplicationUser = "repl"
)
