package v1alpha1

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Names the operator uses itself, or the server owns; a MySQLUser may not take them. The
// CRD's CEL rule carries the same list; a test keeps the two equal.
var ReservedUsers = []string{"root", "mysqlop", "repl", "mariadb.sys", "mysql.sys", "mysql.session", "mysql.infoschema", "PUBLIC"}

// SystemSchemas are schemas a MySQLDatabase may not manage.
var SystemSchemas = []string{"mysql", "information_schema", "performance_schema", "sys"}

// GlobalPrivileges are the only privileges a MySQLUser may hold on *.*: they show the
// server's state and no data. Every other global privilege is refused: some write past
// read_only, which fencing a former primary relies on (ALL, SUPER, READ ONLY ADMIN, on MySQL
// CONNECTION_ADMIN), some reach files or stop the server (FILE, SHUTDOWN: with both an
// account wrote an init_file and became superuser), some manage accounts, replication or the
// configuration (CREATE USER, RELOAD, BINLOG ADMIN, SYSTEM_VARIABLES_ADMIN, ...), and the
// data privileges on *.* include the mysql schema, which holds the accounts. The CRD's CEL
// rule carries the same list; a test keeps the two equal.
var GlobalPrivileges = []string{"BINLOG MONITOR", "PROCESS", "REPLICA MONITOR", "REPLICATION CLIENT", "SHOW DATABASES", "SLAVE MONITOR", "USAGE"}

// globalPrivilegesMessage is the refusal of a privilege on *.*, at admission and here.
const globalPrivilegesMessage = "on *.* only BINLOG MONITOR, PROCESS, REPLICA MONITOR, REPLICATION CLIENT, SHOW DATABASES, SLAVE MONITOR and USAGE are granted: the others write past read_only, reach files or the accounts, or manage the server"

// closedSchemas take no grant of a MySQLUser at all: mysql holds the accounts and their
// privileges, information_schema is the server's own.
var closedSchemas = []string{"mysql", "information_schema"}

// readOnlySchemas take only SELECT: they show the server's state (MariaDB refuses most other
// privileges on performance_schema anyway).
var readOnlySchemas = []string{"performance_schema", "sys"}

// globalPrivilege is p as compared with GlobalPrivileges: SHOW GRANTS' form, with MySQL's
// underscores read as spaces.
func globalPrivilege(p string) string { return strings.ReplaceAll(NormalizePrivilege(p), "_", " ") }

// GrantPatternMatches reports whether a GRANT database pattern matches the schema name,
// ignoring case: as in GRANT, _ matches one character and % any run, unless escaped with a
// backslash.
func GrantPatternMatches(pattern, name string) bool {
	return likeMatch(strings.ToLower(pattern), strings.ToLower(name))
}

func likeMatch(p, s string) bool {
	for p != "" {
		switch c := p[0]; {
		case c == '%':
			for p != "" && p[0] == '%' {
				p = p[1:]
			}
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if likeMatch(p, s[i:]) {
					return true
				}
			}
			return false
		case c == '_':
			if s == "" {
				return false
			}
			p, s = p[1:], s[1:]
		default:
			if c == '\\' && len(p) > 1 {
				p = p[1:]
				c = p[0]
			}
			if s == "" || s[0] != c {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return s == ""
}

// schemasMatched returns those of names that pattern matches.
func schemasMatched(pattern string, names []string) []string {
	var out []string
	for _, n := range names {
		if GrantPatternMatches(pattern, n) {
			out = append(out, n)
		}
	}
	return out
}

// The patterns repeat the CRD's, so the controller refuses what admission would have; SQL
// built from these values relies on them.
var (
	userPattern      = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$`)
	hostPattern      = regexp.MustCompile(`^[A-Za-z0-9_.%:/-]{1,255}$`)
	privilegePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z_ ]*[A-Za-z]$`)
	grantDBPattern   = regexp.MustCompile(`^(\*|[A-Za-z0-9_$%\\-]{1,64})$`)
	tablePattern     = regexp.MustCompile(`^(\*|[A-Za-z0-9_$-]{1,64})$`)
	schemaPattern    = regexp.MustCompile(`^[A-Za-z0-9_$-]{1,64}$`)
	charsetPattern   = regexp.MustCompile(`^[a-z0-9_]{0,64}$`)
)

// NormalizePrivilege returns a privilege in the form SHOW GRANTS prints: upper case, single
// spaces, "ALL" spelled "ALL PRIVILEGES", and MySQL's READ_ONLY style read as words.
func NormalizePrivilege(p string) string {
	p = strings.ToUpper(strings.Join(strings.Fields(p), " "))
	if p == "ALL" {
		return "ALL PRIVILEGES"
	}
	return p
}

// SetUserDefaults fills unset fields of u. Call it on a copy, never on a cached object.
func SetUserDefaults(u *MySQLUser) {
	s := &u.Spec
	if s.User == "" {
		s.User = u.Name
	}
	if s.Host == "" {
		s.Host = "%"
	}
	if s.PasswordSecretRef.Key == "" {
		s.PasswordSecretRef.Key = DefaultSecretKey
	}
	if s.DeletionPolicy == "" {
		s.DeletionPolicy = DeletionDelete
	}
	for i := range s.Grants {
		if s.Grants[i].Table == "" {
			s.Grants[i].Table = "*"
		}
	}
}

// ValidateUser checks a defaulted MySQLUser.
func ValidateUser(u *MySQLUser) field.ErrorList {
	var errs field.ErrorList
	s := &u.Spec
	p := field.NewPath("spec")
	if s.ClusterRef.Name == "" {
		errs = append(errs, field.Required(p.Child("clusterRef", "name"), ""))
	}
	if !userPattern.MatchString(s.User) {
		errs = append(errs, field.Invalid(p.Child("user"), s.User, "must be 1-32 letters, digits, '_', '.' or '-' (the object's name is the default)"))
	} else if slices.Contains(ReservedUsers, s.User) {
		errs = append(errs, field.Forbidden(p.Child("user"), "user name is reserved"))
	}
	if !hostPattern.MatchString(s.Host) {
		errs = append(errs, field.Invalid(p.Child("host"), s.Host, "must be a host pattern of letters, digits and _.%:/-"))
	}
	if s.PasswordSecretRef.Name == "" {
		errs = append(errs, field.Required(p.Child("passwordSecretRef", "name"), ""))
	}
	if s.MaxUserConnections < 0 || s.MaxUserConnections > MaxServerID {
		errs = append(errs, field.Invalid(p.Child("maxUserConnections"), s.MaxUserConnections, "must be between 0 and 4294967295"))
	}
	errs = append(errs, validateDeletionPolicy(p.Child("deletionPolicy"), s.DeletionPolicy)...)
	for i, g := range s.Grants {
		gp := p.Child("grants").Index(i)
		if len(g.Privileges) == 0 {
			errs = append(errs, field.Required(gp.Child("privileges"), ""))
		}
		closed := schemasMatched(g.Database, closedSchemas)
		// A pattern that also matches a closed schema is refused as a whole, below.
		readOnly := g.Database != "*" && len(closed) == 0 && len(schemasMatched(g.Database, readOnlySchemas)) > 0
		for j, priv := range g.Privileges {
			pp := gp.Child("privileges").Index(j)
			switch {
			case !privilegePattern.MatchString(priv) || len(priv) > 64:
				errs = append(errs, field.Invalid(pp, priv, "must be a privilege name such as SELECT or ALL PRIVILEGES"))
			case g.Database == "*" && !slices.Contains(GlobalPrivileges, globalPrivilege(priv)):
				errs = append(errs, field.Forbidden(pp, globalPrivilegesMessage))
			case readOnly && globalPrivilege(priv) != "SELECT":
				errs = append(errs, field.Forbidden(pp, fmt.Sprintf("database %q matches %s: only SELECT is granted there",
					g.Database, strings.Join(schemasMatched(g.Database, readOnlySchemas), " and "))))
			}
		}
		switch {
		case !grantDBPattern.MatchString(g.Database):
			errs = append(errs, field.Invalid(gp.Child("database"), g.Database, "must be * or a database name"))
		case g.Database != "*" && len(closed) > 0:
			errs = append(errs, field.Forbidden(gp.Child("database"), fmt.Sprintf("%q matches the system schema %s (as in GRANT, _ and %% are wildcards): nothing is granted there",
				g.Database, strings.Join(closed, " and "))))
		}
		if !tablePattern.MatchString(g.Table) {
			errs = append(errs, field.Invalid(gp.Child("table"), g.Table, "must be * or a table name"))
		} else if g.Database == "*" && g.Table != "*" {
			errs = append(errs, field.Invalid(gp.Child("table"), g.Table, "a table needs a database"))
		}
	}
	return errs
}

// SetDatabaseDefaults fills unset fields of d. Call it on a copy, never on a cached object.
func SetDatabaseDefaults(d *MySQLDatabase) {
	if d.Spec.Name == "" {
		d.Spec.Name = d.Name
	}
	if d.Spec.DeletionPolicy == "" {
		d.Spec.DeletionPolicy = DeletionRetain
	}
}

// ValidateDatabase checks a defaulted MySQLDatabase.
func ValidateDatabase(d *MySQLDatabase) field.ErrorList {
	var errs field.ErrorList
	s := &d.Spec
	p := field.NewPath("spec")
	if s.ClusterRef.Name == "" {
		errs = append(errs, field.Required(p.Child("clusterRef", "name"), ""))
	}
	if !schemaPattern.MatchString(s.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), s.Name, "must be 1-64 letters, digits, '_', '$' or '-' (the object's name is the default)"))
	} else if slices.Contains(SystemSchemas, strings.ToLower(s.Name)) {
		errs = append(errs, field.Forbidden(p.Child("name"), "system schemas are not managed"))
	}
	if !charsetPattern.MatchString(s.CharacterSet) {
		errs = append(errs, field.Invalid(p.Child("characterSet"), s.CharacterSet, "must be a character set name"))
	}
	if !charsetPattern.MatchString(s.Collation) {
		errs = append(errs, field.Invalid(p.Child("collation"), s.Collation, "must be a collation name"))
	}
	errs = append(errs, validateDeletionPolicy(p.Child("deletionPolicy"), s.DeletionPolicy)...)
	return errs
}

func validateDeletionPolicy(p *field.Path, d DeletionPolicy) field.ErrorList {
	switch d {
	case DeletionDelete, DeletionRetain:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, d, []DeletionPolicy{DeletionDelete, DeletionRetain})}
}
