package mysql

import (
	"context"
	"database/sql"
	"fmt"
)

// GlobalStatus returns SHOW GLOBAL STATUS: the server's counters and gauges by name.
func (in *Instance) GlobalStatus(ctx context.Context) (map[string]string, error) {
	return in.showVariables(ctx, "SHOW GLOBAL STATUS")
}

// Limits are the server's configured capacities that its status is read against.
type Limits struct {
	MaxConnections  int64
	BufferPoolBytes int64
}

// Limits reads max_connections and innodb_buffer_pool_size.
func (in *Instance) Limits(ctx context.Context) (Limits, error) {
	var l Limits
	if err := in.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.max_connections, @@GLOBAL.innodb_buffer_pool_size").Scan(&l.MaxConnections, &l.BufferPoolBytes); err != nil {
		return l, fmt.Errorf("read limits: %w", err)
	}
	return l, nil
}

// BinaryLog is one file of SHOW BINARY LOGS.
type BinaryLog struct {
	Name string
	Size int64
}

// BinaryLogs lists the server's binary logs, oldest first.
func (in *Instance) BinaryLogs(ctx context.Context) ([]BinaryLog, error) {
	rows, err := in.DB.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("list binary logs: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("list binary logs: %w", err)
	}
	var out []BinaryLog
	for rows.Next() {
		// Log_name and File_size, then columns that differ by flavor and version.
		var l BinaryLog
		vals := []any{&l.Name, &l.Size}
		for range cols[min(2, len(cols)):] {
			vals = append(vals, new(sql.RawBytes))
		}
		if err := rows.Scan(vals...); err != nil {
			return nil, fmt.Errorf("list binary logs: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
