package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// SystemSchemas are the server's own schemas: their content differs between servers holding
// the same data (accounts, statistics), so checksums leave them out.
var SystemSchemas = []string{"mysql", "information_schema", "performance_schema", "sys"}

// TableChecksum is the CHECKSUM TABLE result of one table.
type TableChecksum struct {
	// Table is schema.table, unquoted.
	Table string `json:"table"`
	// Checksum is the server's checksum in decimal.
	Checksum string `json:"checksum"`
}

// Checksums returns the CHECKSUM TABLE of every base table outside SystemSchemas, sorted by
// name. Two servers of the same flavor and version holding the same rows give the same
// checksums, whatever wrote the rows (a logical load, a physical copy, replication).
func (in *Instance) Checksums(ctx context.Context) ([]TableChecksum, error) {
	list, err := in.DB.QueryContext(ctx, "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"+
		" AND table_schema NOT IN (?, ?, ?, ?) ORDER BY table_schema, table_name", anys(SystemSchemas)...)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	type name struct{ schema, table string }
	var tables []name
	for list.Next() {
		var n name
		if err := list.Scan(&n.schema, &n.table); err != nil {
			list.Close()
			return nil, fmt.Errorf("list tables: %w", err)
		}
		tables = append(tables, n)
	}
	list.Close()
	if err := list.Err(); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	out := make([]TableChecksum, 0, len(tables))
	for _, n := range tables {
		// One table per statement: a table dropped meanwhile yields NULL, not an error for all.
		var table string
		var sum sql.NullString
		if err := in.DB.QueryRowContext(ctx, "CHECKSUM TABLE "+QuoteIdent(n.schema)+"."+QuoteIdent(n.table)+" EXTENDED").Scan(&table, &sum); err != nil {
			return nil, fmt.Errorf("checksum table %s.%s: %w", n.schema, n.table, err)
		}
		if !sum.Valid {
			continue
		}
		out = append(out, TableChecksum{Table: n.schema + "." + n.table, Checksum: sum.String})
	}
	slices.SortFunc(out, func(a, b TableChecksum) int { return cmp.Compare(a.Table, b.Table) })
	return out, nil
}

// CompareChecksums compares the checksums of two servers: tables is the number of tables
// either holds, differ names (sorted) those whose checksums differ or that only one holds.
func CompareChecksums(a, b []TableChecksum) (tables int, differ []string) {
	sums := map[string][2]string{}
	for _, c := range a {
		s := sums[c.Table]
		s[0] = c.Checksum
		sums[c.Table] = s
	}
	for _, c := range b {
		s := sums[c.Table]
		s[1] = c.Checksum
		sums[c.Table] = s
	}
	for t, s := range sums {
		if s[0] != s[1] {
			differ = append(differ, t)
		}
	}
	slices.Sort(differ)
	return len(sums), differ
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
