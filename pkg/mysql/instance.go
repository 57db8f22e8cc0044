package mysql

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ConnConfig says how to reach one instance.
type ConnConfig struct {
	// Addr is host:port for TCP, or a socket path when Socket is set.
	Addr   string
	Socket bool
	User   string
	// Password is read from a mounted Secret file by the caller; it is never logged.
	Password string
	// Timeout bounds connecting, reading and writing.
	Timeout time.Duration
	// TLS, when set, encrypts the connection and says whom the server must prove to be.
	TLS *tls.Config
}

// Open returns a connection pool to one instance. It does not connect yet.
func Open(c ConnConfig) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = c.User, c.Password
	cfg.Net, cfg.Addr = "tcp", c.Addr
	if c.Socket {
		cfg.Net = "unix"
	}
	t := c.Timeout
	if t <= 0 {
		t = 5 * time.Second
	}
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = t, t, t
	cfg.TLS = c.TLS
	// Client-side interpolation, so statements the server cannot prepare still take arguments.
	cfg.InterpolateParams = true
	cfg.ParseTime = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql connector for %s: %w", c.Addr, err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

// Instance is one server and its flavor.
type Instance struct {
	DB     *sql.DB
	Flavor Flavor
}

// Exec runs statements in order on one connection and stops at the first error. Errors name
// the statement's text but never its arguments.
func (in *Instance) Exec(ctx context.Context, stmts ...Statement) error {
	conn, err := in.DB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	for _, s := range stmts {
		if s.Query == "" {
			continue
		}
		if _, err := conn.ExecContext(ctx, s.Query, s.Args...); err != nil {
			if s.Sensitive {
				return fmt.Errorf("%s: %w", firstWords(s.Query), redact(err))
			}
			return fmt.Errorf("%s: %w", firstWords(s.Query), err)
		}
	}
	return nil
}

// ExecSQL runs argument-free statements in order.
func (in *Instance) ExecSQL(ctx context.Context, queries ...string) error {
	stmts := make([]Statement, len(queries))
	for i, q := range queries {
		stmts[i] = Statement{Query: q}
	}
	return in.Exec(ctx, stmts...)
}

// redact keeps what a server error is (its number and SQLSTATE) and drops its message, which
// can quote the statement and so a secret argument.
func redact(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return &mysql.MySQLError{Number: me.Number, SQLState: me.SQLState, Message: "(message withheld: the statement holds a secret)"}
	}
	// Other errors come from the connection, not the server, and never quote the statement.
	return err
}

func firstWords(q string) string {
	f := strings.Fields(q)
	if len(f) > 4 {
		f = f[:4]
	}
	return strings.Join(f, " ")
}

// ReplicaStatus is the state of an instance's replication threads.
type ReplicaStatus struct {
	SourceHost   string
	SourcePort   int
	IORunning    bool
	SQLRunning   bool
	LastIOError  string
	LastSQLError string
	// Retrieved is what the IO thread received (MySQL Retrieved_Gtid_Set, MariaDB Gtid_IO_Pos).
	Retrieved GTIDSet
	// LagSeconds is Seconds_Behind_Source; nil while the SQL thread does not run.
	LagSeconds *int64
	// TLS is whether the replica connects over TLS and verifies the source's certificate.
	TLS bool
}

// Status is what the clustering manager needs to know about one instance.
type Status struct {
	ServerID      uint32
	Version       string
	ReadOnly      bool
	SuperReadOnly bool
	Executed      GTIDSet
	Purged        GTIDSet
	// Replica is nil when the instance has no replication source configured.
	Replica *ReplicaStatus
	// SemiSyncSource and SemiSyncReplica are the enabled switches; SemiSyncSourceActive is
	// whether the primary currently waits for acknowledgements.
	SemiSyncSource       bool
	SemiSyncReplica      bool
	SemiSyncSourceActive bool
}

// Status reads the instance's state.
func (in *Instance) Status(ctx context.Context) (*Status, error) {
	f := in.Flavor
	st := &Status{}
	var executed, purged string
	if err := in.DB.QueryRowContext(ctx, f.StateQuery()).Scan(&st.ServerID, &st.Version, &executed, &purged, &st.ReadOnly, &st.SuperReadOnly); err != nil {
		return nil, fmt.Errorf("read server id, GTIDs and read_only: %w", err)
	}
	var err error
	if st.Executed, err = ParseGTIDSet(f, executed); err != nil {
		return nil, err
	}
	if st.Purged, err = ParseGTIDSet(f, purged); err != nil {
		return nil, err
	}
	vars, err := in.showVariables(ctx, "SHOW GLOBAL VARIABLES LIKE 'rpl_semi_sync_%enabled'")
	if err != nil {
		return nil, err
	}
	st.SemiSyncSource = vars["rpl_semi_sync_source_enabled"] == "ON" || vars["rpl_semi_sync_master_enabled"] == "ON"
	st.SemiSyncReplica = vars["rpl_semi_sync_replica_enabled"] == "ON" || vars["rpl_semi_sync_slave_enabled"] == "ON"
	status, err := in.showVariables(ctx, f.SemiSyncStatusQuery())
	if err != nil {
		return nil, err
	}
	st.SemiSyncSourceActive = status["Rpl_semi_sync_source_status"] == "ON" || status["Rpl_semi_sync_master_status"] == "ON"
	if st.Replica, err = in.replicaStatus(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

func (in *Instance) showVariables(ctx context.Context, q string) (map[string]string, error) {
	rows, err := in.DB.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", firstWords(q), err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("%s: %w", firstWords(q), err)
		}
		out[k] = v
	}
	return out, rows.Err()
}

// replicaStatus reads SHOW REPLICA/SLAVE STATUS by column name, since the columns differ
// between flavors and versions.
func (in *Instance) replicaStatus(ctx context.Context) (*ReplicaStatus, error) {
	rows, err := in.DB.QueryContext(ctx, in.Flavor.ReplicaStatus())
	if err != nil {
		return nil, fmt.Errorf("read replica status: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("read replica status: %w", err)
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	raw := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, fmt.Errorf("read replica status: %w", err)
	}
	m := map[string]string{}
	for i, c := range cols {
		m[c] = raw[i].String
	}
	get := func(names ...string) string {
		for _, n := range names {
			if v, ok := m[n]; ok {
				return v
			}
		}
		return ""
	}
	rs := &ReplicaStatus{
		SourceHost:   get("Source_Host", "Master_Host"),
		IORunning:    get("Replica_IO_Running", "Slave_IO_Running") == "Yes",
		SQLRunning:   get("Replica_SQL_Running", "Slave_SQL_Running") == "Yes",
		LastIOError:  get("Last_IO_Error"),
		LastSQLError: get("Last_SQL_Error"),
		TLS:          get("Source_SSL_Allowed", "Master_SSL_Allowed") == "Yes" && get("Source_SSL_Verify_Server_Cert", "Master_SSL_Verify_Server_Cert") == "Yes",
	}
	rs.SourcePort, _ = strconv.Atoi(get("Source_Port", "Master_Port"))
	if lag, err := strconv.ParseInt(get("Seconds_Behind_Source", "Seconds_Behind_Master"), 10, 64); err == nil {
		rs.LagSeconds = &lag
	}
	retrieved := get("Retrieved_Gtid_Set")
	if in.Flavor == MariaDB {
		retrieved = get("Gtid_IO_Pos")
	}
	if rs.Retrieved, err = ParseGTIDSet(in.Flavor, retrieved); err != nil {
		return nil, err
	}
	return rs, nil
}

// WaitForGTID blocks until the instance's executed set contains gtids or timeout passes. It
// polls the executed set rather than calling MASTER_GTID_WAIT: on MariaDB that function
// compares against the replica position, which never holds transactions an instance wrote as
// a primary, so a demoted primary would wait forever for what it already has.
func (in *Instance) WaitForGTID(ctx context.Context, gtids GTIDSet, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var s string
		if err := in.DB.QueryRowContext(ctx, in.Flavor.ExecutedQuery()).Scan(&s); err != nil {
			return fmt.Errorf("wait for GTIDs: %w", err)
		}
		if executed, err := ParseGTIDSet(in.Flavor, s); err == nil && executed.Contains(gtids) {
			return nil
		}
		if time.Now().After(deadline) {
			return ErrWaitTimeout
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ErrWaitTimeout is returned when a replica did not apply a GTID position in time.
var ErrWaitTimeout = errors.New("timed out waiting for GTIDs to be applied")

// KillClientConnections ends every client connection except those of exceptUsers, so that
// nothing keeps writing to a demoted primary.
func (in *Instance) KillClientConnections(ctx context.Context, exceptUsers ...string) (int, error) {
	return in.killConnections(ctx, ClientConnections(exceptUsers...))
}

// KillAckWaiters ends the client connections (but exceptUsers') whose commit has waited at
// least minWait for a semi-sync acknowledgement.
func (in *Instance) KillAckWaiters(ctx context.Context, minWait time.Duration, exceptUsers ...string) (int, error) {
	s := ClientConnections(exceptUsers...)
	s.Query += " AND STATE LIKE 'Waiting for semi-sync ACK%' AND TIME >= ?"
	s.Args = append(s.Args, int(minWait.Seconds()))
	return in.killConnections(ctx, s)
}

func (in *Instance) killConnections(ctx context.Context, s Statement) (int, error) {
	rows, err := in.DB.QueryContext(ctx, s.Query, s.Args...)
	if err != nil {
		return 0, fmt.Errorf("list connections: %w", err)
	}
	var ids []uint64
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("list connections: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	killed := 0
	for _, id := range ids {
		if _, err := in.DB.ExecContext(ctx, KillConnection(id)); err == nil {
			killed++
		}
	}
	return killed, nil
}
