package v1alpha1

import (
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

// ForbiddenGlobalPrivileges may not be granted on *.*: each lets an account write while
// read_only is on, and fencing a former primary during a failover relies on read_only.
var ForbiddenGlobalPrivileges = []string{"ALL", "ALL PRIVILEGES", "SUPER", "READ ONLY ADMIN"}

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
		for j, priv := range g.Privileges {
			pp := gp.Child("privileges").Index(j)
			switch {
			case !privilegePattern.MatchString(priv) || len(priv) > 64:
				errs = append(errs, field.Invalid(pp, priv, "must be a privilege name such as SELECT or ALL PRIVILEGES"))
			case g.Database == "*" && slices.Contains(ForbiddenGlobalPrivileges, strings.ReplaceAll(NormalizePrivilege(priv), "_", " ")):
				errs = append(errs, field.Forbidden(pp, "ALL, SUPER and READ ONLY ADMIN on *.* bypass read_only and are not granted"))
			}
		}
		if !grantDBPattern.MatchString(g.Database) {
			errs = append(errs, field.Invalid(gp.Child("database"), g.Database, "must be * or a database name"))
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
