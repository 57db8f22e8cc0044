package mysql

import (
	"context"
	"crypto/sha1" //nolint:gosec // mysql_native_password is defined as SHA1(SHA1(password)).
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Account is a user@host account.
type Account struct {
	User string
	Host string
}

func (a Account) String() string { return fmt.Sprintf("'%s'@'%s'", a.User, a.Host) }

// AccountOptions are an account's limits.
type AccountOptions struct {
	// MaxUserConnections limits simultaneous connections; 0 is unlimited.
	MaxUserConnections int64
	// RequireTLS refuses unencrypted connections.
	RequireTLS bool
	// RequireSubject, when set, accepts only TLS connections with a verified client
	// certificate of this subject (REQUIRE SUBJECT); RequireTLS is then false.
	RequireSubject string
}

// Scope is where privileges apply: a database (pattern) and a table, "*" for all.
type Scope struct {
	Database string
	Table    string
}

func (s Scope) sql() string { return quoteIdentOrStar(s.Database) + "." + quoteIdentOrStar(s.Table) }

// ScopeGrant is what an account holds on one scope.
type ScopeGrant struct {
	// Privileges in SHOW GRANTS form, sorted; "ALL PRIVILEGES" stands alone.
	Privileges []string
	// GrantOption lets the account pass its privileges on this scope.
	GrantOption bool
}

// Grants are an account's privileges by scope. Grants on routines, proxies, roles and
// columns are not represented: the operator neither reads nor changes them.
type Grants map[Scope]ScopeGrant

// AllPrivileges is how SHOW GRANTS prints every privilege of a level.
const AllPrivileges = "ALL PRIVILEGES"

var privilegeName = regexp.MustCompile(`^[A-Z][A-Z_ ]*[A-Z]$`)

// Add merges privileges on s into g, normalised as SHOW GRANTS prints them. USAGE (no
// privilege) is dropped. Names are checked against a strict pattern: they become SQL text.
func (g Grants) Add(s Scope, privileges []string, grantOption bool) error {
	cur := g[s]
	set := map[string]bool{}
	for _, p := range cur.Privileges {
		set[p] = true
	}
	for _, p := range privileges {
		p = strings.ToUpper(strings.Join(strings.Fields(p), " "))
		if p == "ALL" {
			p = AllPrivileges
		}
		if !privilegeName.MatchString(p) {
			return fmt.Errorf("invalid privilege %q", p)
		}
		if p != "USAGE" {
			set[p] = true
		}
	}
	if set[AllPrivileges] {
		set = map[string]bool{AllPrivileges: true}
	}
	cur.Privileges = slices.Sorted(maps.Keys(set))
	cur.GrantOption = cur.GrantOption || grantOption
	if len(cur.Privileges) == 0 && !cur.GrantOption {
		delete(g, s)
		return nil
	}
	g[s] = cur
	return nil
}

// privilegeAliases are, per flavor, privileges the server reports under another name.
var privilegeAliases = map[Flavor]map[string]string{
	MariaDB: {"REPLICATION CLIENT": "BINLOG MONITOR", "REPLICA MONITOR": "SLAVE MONITOR"},
}

// ReportedGrants returns g with each privilege named as f's SHOW GRANTS reports it, so that
// desired grants compare equal to what the server holds: MariaDB reports REPLICATION CLIENT
// as BINLOG MONITOR, and without this every reconcile revoked and granted it again.
func (f Flavor) ReportedGrants(g Grants) Grants {
	aliases := privilegeAliases[f]
	out := Grants{}
	for s, sg := range g {
		privs := slices.Clone(sg.Privileges)
		for i, p := range privs {
			if a, ok := aliases[p]; ok {
				privs[i] = a
			}
		}
		// Add sorts and dedupes; the names were checked when g was built.
		_ = out.Add(s, privs, sg.GrantOption)
	}
	return out
}

// ParseShowGrants reads the lines SHOW GRANTS prints for one account. Lines it does not
// manage (roles, proxies, routines, column privileges) are skipped; the rest of each line,
// which can hold a password hash, is read for WITH GRANT OPTION and otherwise ignored.
func ParseShowGrants(lines []string) (Grants, error) {
	g := Grants{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "GRANT ") {
			continue
		}
		on := strings.Index(l, " ON ")
		if on < 0 {
			continue // a role granted to the account
		}
		privs := l[len("GRANT "):on]
		rest := l[on+len(" ON "):]
		if strings.Contains(privs, "(") || privs == "PROXY" ||
			strings.HasPrefix(rest, "PROCEDURE ") || strings.HasPrefix(rest, "FUNCTION ") || strings.HasPrefix(rest, "PACKAGE ") {
			continue
		}
		scope, tail, err := parseScope(rest)
		if err != nil {
			return nil, fmt.Errorf("parse grant scope: %w", err)
		}
		if !strings.HasPrefix(tail, " TO ") {
			return nil, fmt.Errorf("parse grant: no grantee after scope %s", scope.sql())
		}
		var list []string
		for _, p := range strings.Split(privs, ",") {
			list = append(list, strings.TrimSpace(p))
		}
		if err := g.Add(scope, list, strings.Contains(tail, " WITH GRANT OPTION")); err != nil {
			return nil, fmt.Errorf("parse grant on %s: %w", scope.sql(), err)
		}
	}
	return g, nil
}

// parseScope reads `db`.`table` (either part may be *) from the start of s.
func parseScope(s string) (Scope, string, error) {
	db, rest, err := parseIdent(s)
	if err != nil {
		return Scope{}, "", err
	}
	if !strings.HasPrefix(rest, ".") {
		return Scope{}, "", errors.New("no '.' after the database")
	}
	table, rest, err := parseIdent(rest[1:])
	if err != nil {
		return Scope{}, "", err
	}
	return Scope{Database: db, Table: table}, rest, nil
}

func parseIdent(s string) (string, string, error) {
	if strings.HasPrefix(s, "*") {
		return "*", s[1:], nil
	}
	if !strings.HasPrefix(s, "`") {
		return "", "", errors.New("identifier is not quoted")
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '`' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '`' {
			b.WriteByte('`')
			i++
			continue
		}
		return b.String(), s[i+1:], nil
	}
	return "", "", errors.New("unterminated identifier")
}

// DiffGrants returns the statements that turn current into desired for a: revokes first, so
// that an account never holds more than both sets together, then grants. Equal sets give none.
func DiffGrants(a Account, current, desired Grants) []Statement {
	scopes := map[Scope]bool{}
	for s := range current {
		scopes[s] = true
	}
	for s := range desired {
		scopes[s] = true
	}
	var revokes, grants []Statement
	for _, s := range slices.SortedFunc(maps.Keys(scopes), compareScopes) {
		cur, des := current[s], desired[s]
		curAll, desAll := slices.Contains(cur.Privileges, AllPrivileges), slices.Contains(des.Privileges, AllPrivileges)
		var remove, add []string
		switch {
		case curAll && desAll:
		case curAll:
			// Revoke everything and grant the listed subset: ALL cannot be partly revoked by name.
			remove = []string{AllPrivileges}
			add = des.Privileges
		case desAll:
			add = des.Privileges
		default:
			remove = minus(cur.Privileges, des.Privileges)
			add = minus(des.Privileges, cur.Privileges)
		}
		if len(remove) > 0 {
			revokes = append(revokes, privilegeStatement("REVOKE", remove, s, "FROM", a, ""))
		}
		if cur.GrantOption && !des.GrantOption {
			revokes = append(revokes, privilegeStatement("REVOKE", []string{"GRANT OPTION"}, s, "FROM", a, ""))
		}
		withGrant := ""
		if des.GrantOption {
			withGrant = " WITH GRANT OPTION"
		}
		switch {
		case len(add) > 0:
			grants = append(grants, privilegeStatement("GRANT", add, s, "TO", a, withGrant))
		case des.GrantOption && !cur.GrantOption:
			grants = append(grants, privilegeStatement("GRANT", []string{"USAGE"}, s, "TO", a, withGrant))
		}
	}
	return append(revokes, grants...)
}

func privilegeStatement(verb string, privs []string, s Scope, prep string, a Account, suffix string) Statement {
	return Statement{
		Query: fmt.Sprintf("%s %s ON %s %s ?@?%s", verb, strings.Join(privs, ", "), s.sql(), prep, suffix),
		Args:  []any{a.User, a.Host},
	}
}

func compareScopes(a, b Scope) int {
	if c := strings.Compare(a.Database, b.Database); c != 0 {
		return c
	}
	return strings.Compare(a.Table, b.Table)
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// identifiedBy is the clause that sets a password. MariaDB gets the mysql_native_password
// hash, so the password itself reaches neither the binary log nor the query logs; MySQL
// rewrites IDENTIFIED BY in its logs itself.
func (f Flavor) identifiedBy(password string) (string, any) {
	if f == MariaDB {
		return "IDENTIFIED BY PASSWORD ?", NativePasswordHash(password)
	}
	return "IDENTIFIED BY ?", password
}

// NativePasswordHash is the mysql_native_password hash of password: "*" and the upper-case
// hex of SHA1(SHA1(password)).
func NativePasswordHash(password string) string {
	first := sha1.Sum([]byte(password)) //nolint:gosec // the algorithm is fixed by the protocol.
	second := sha1.Sum(first[:])        //nolint:gosec
	return "*" + strings.ToUpper(hex.EncodeToString(second[:]))
}

// clause is the REQUIRE and WITH part of CREATE and ALTER USER, and its arguments.
func (o AccountOptions) clause() (string, []any) {
	req, args := "REQUIRE NONE", []any(nil)
	switch {
	case o.RequireSubject != "":
		req, args = "REQUIRE SUBJECT ?", []any{o.RequireSubject}
	case o.RequireTLS:
		req = "REQUIRE SSL"
	}
	return fmt.Sprintf("%s WITH MAX_USER_CONNECTIONS %d", req, o.MaxUserConnections), args
}

// CreateAccount creates a with password and options.
func (f Flavor) CreateAccount(a Account, password string, o AccountOptions) Statement {
	clause, arg := f.identifiedBy(password)
	opts, optArgs := o.clause()
	return Statement{Query: "CREATE USER ?@? " + clause + " " + opts, Args: append([]any{a.User, a.Host, arg}, optArgs...), Sensitive: true}
}

// SetPassword sets a's password.
func (f Flavor) SetPassword(a Account, password string) Statement {
	clause, arg := f.identifiedBy(password)
	return Statement{Query: "ALTER USER ?@? " + clause, Args: []any{a.User, a.Host, arg}, Sensitive: true}
}

// AlterAccountOptions sets a's limits.
func AlterAccountOptions(a Account, o AccountOptions) Statement {
	opts, optArgs := o.clause()
	return Statement{Query: "ALTER USER ?@? " + opts, Args: append([]any{a.User, a.Host}, optArgs...)}
}

// DropAccount drops a if it exists.
func DropAccount(a Account) Statement {
	return Statement{Query: "DROP USER IF EXISTS ?@?", Args: []any{a.User, a.Host}}
}

// AccountState is what the server holds for an account.
type AccountState struct {
	Options AccountOptions
	Grants  Grants
	// Unmanaged names the kinds of grants the account holds that Grants cannot express and
	// nothing here changes: role, proxy, routine, column.
	Unmanaged []string
}

// Account returns a's state, or nil when the account does not exist.
func (in *Instance) Account(ctx context.Context, a Account) (*AccountState, error) {
	var st AccountState
	var ssl, subject string
	err := in.DB.QueryRowContext(ctx, "SELECT max_user_connections, ssl_type, CONVERT(x509_subject USING utf8mb4) FROM mysql.user WHERE User = ? AND Host = ?", a.User, a.Host).
		Scan(&st.Options.MaxUserConnections, &ssl, &subject)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read account %s: %w", a, err)
	}
	if ssl == "SPECIFIED" && subject != "" {
		st.Options.RequireSubject = subject
	} else {
		st.Options.RequireTLS = ssl != ""
	}
	rows, err := in.DB.QueryContext(ctx, "SHOW GRANTS FOR ?@?", a.User, a.Host)
	if err != nil {
		return nil, fmt.Errorf("show grants for %s: %w", a, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return nil, fmt.Errorf("show grants for %s: %w", a, err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("show grants for %s: %w", a, err)
	}
	if st.Grants, err = ParseShowGrants(lines); err != nil {
		return nil, fmt.Errorf("grants of %s: %w", a, err)
	}
	st.Unmanaged = UnmanagedGrants(lines)
	return &st, nil
}

// UnmanagedGrants names, once each in order of kind, the grants in SHOW GRANTS lines that
// ParseShowGrants skips: role, proxy, routine and column grants.
func UnmanagedGrants(lines []string) []string {
	found := map[string]bool{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "GRANT ") {
			continue
		}
		on := strings.Index(l, " ON ")
		if on < 0 {
			found["role"] = true
			continue
		}
		privs, rest := l[len("GRANT "):on], l[on+len(" ON "):]
		switch {
		case privs == "PROXY":
			found["proxy"] = true
		case strings.HasPrefix(rest, "PROCEDURE ") || strings.HasPrefix(rest, "FUNCTION ") || strings.HasPrefix(rest, "PACKAGE "):
			found["routine"] = true
		case strings.Contains(privs, "("):
			found["column"] = true
		}
	}
	var out []string
	for _, k := range []string{"role", "proxy", "routine", "column"} {
		if found[k] {
			out = append(out, k)
		}
	}
	return out
}

var charsetName = regexp.MustCompile(`^[a-z0-9_]*$`)

// Schema is a database's defaults.
type Schema struct {
	CharacterSet string
	Collation    string
}

func (s Schema) clause() (string, error) {
	if !charsetName.MatchString(s.CharacterSet) || !charsetName.MatchString(s.Collation) {
		return "", fmt.Errorf("invalid character set %q or collation %q", s.CharacterSet, s.Collation)
	}
	var out string
	if s.CharacterSet != "" {
		out += " CHARACTER SET " + s.CharacterSet
	}
	if s.Collation != "" {
		out += " COLLATE " + s.Collation
	}
	return out, nil
}

// CreateSchema creates database name with defaults s.
func CreateSchema(name string, s Schema) (Statement, error) {
	c, err := s.clause()
	if err != nil {
		return Statement{}, err
	}
	return Statement{Query: "CREATE DATABASE IF NOT EXISTS " + QuoteIdent(name) + c}, nil
}

// AlterSchema changes the defaults of database name.
func AlterSchema(name string, s Schema) (Statement, error) {
	c, err := s.clause()
	if err != nil || c == "" {
		return Statement{}, err
	}
	return Statement{Query: "ALTER DATABASE " + QuoteIdent(name) + c}, nil
}

// DropSchema drops database name and every table in it.
func DropSchema(name string) Statement {
	return Statement{Query: "DROP DATABASE IF EXISTS " + QuoteIdent(name)}
}

// Schema returns the defaults of database name, or nil when it does not exist.
func (in *Instance) Schema(ctx context.Context, name string) (*Schema, error) {
	var s Schema
	err := in.DB.QueryRowContext(ctx,
		"SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).
		Scan(&s.CharacterSet, &s.Collation)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read database %s: %w", name, err)
	}
	return &s, nil
}

// Writable reports whether the instance accepts writes (read_only is off), so that account
// and schema changes are only made on the primary and replicate from there.
func (in *Instance) Writable(ctx context.Context) (bool, error) {
	var ro, superRO bool
	if err := in.DB.QueryRowContext(ctx, in.Flavor.ReadOnlyQuery()).Scan(&ro, &superRO); err != nil {
		return false, fmt.Errorf("read read_only: %w", err)
	}
	return !ro && !superRO, nil
}

// installerAccountsQuery lists the accounts the flavors' datadir initialisers create that the
// operator never wants: root on any host but localhost (MariaDB's mariadb-install-db adds
// root@127.0.0.1, root@::1 and root@<hostname>, all without a password) and anonymous
// accounts. root@localhost stays: init gives it the cluster's root password.
const installerAccountsQuery = "SELECT User, Host FROM mysql.user WHERE (User = 'root' AND Host <> 'localhost') OR User = ''"

// DropInstallerAccounts drops the installers' accounts (installerAccountsQuery) on this
// server alone, without binary logging (each member does it for itself, so replicas record no
// transaction of their own), and returns what it dropped.
func (in *Instance) DropInstallerAccounts(ctx context.Context) ([]Account, error) {
	conn, err := in.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_log_bin = 0"); err != nil {
		return nil, fmt.Errorf("drop installer accounts: %w", err)
	}
	defer restoreBinlog(conn)
	rows, err := conn.QueryContext(ctx, installerAccountsQuery)
	if err != nil {
		return nil, fmt.Errorf("list installer accounts: %w", err)
	}
	var found []Account
	for rows.Next() {
		var a Account
		if err := rows.Scan(&a.User, &a.Host); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list installer accounts: %w", err)
		}
		found = append(found, a)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("list installer accounts: %w", err)
	}
	for i, a := range found {
		s := DropAccount(a)
		if _, err := conn.ExecContext(ctx, s.Query, s.Args...); err != nil {
			return found[:i], fmt.Errorf("drop installer account %s: %w", a, err)
		}
	}
	return found, nil
}

// restoreBinlog turns binary logging back on for a pooled connection that turned it off, or
// discards the connection when that fails: a later statement on it must never go unlogged.
func restoreBinlog(conn *sql.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_log_bin = 1"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}
