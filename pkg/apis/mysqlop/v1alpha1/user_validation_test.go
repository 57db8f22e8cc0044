package v1alpha1

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func validUser() *MySQLUser {
	u := &MySQLUser{Spec: MySQLUserSpec{
		ClusterRef:        ClusterReference{Name: "db"},
		PasswordSecretRef: SecretKeyRef{Name: "app-password"},
		Grants:            []Grant{{Privileges: []string{"SELECT", "insert"}, Database: "app"}},
	}}
	u.Name = "app"
	SetUserDefaults(u)
	return u
}

func TestUserDefaults(t *testing.T) {
	u := validUser()
	s := u.Spec
	if s.User != "app" || s.Host != "%" || s.PasswordSecretRef.Key != DefaultSecretKey || s.DeletionPolicy != DeletionDelete || s.Grants[0].Table != "*" {
		t.Errorf("defaults not applied: %+v", s)
	}
	d := &MySQLDatabase{}
	d.Name = "shop"
	SetDatabaseDefaults(d)
	if d.Spec.Name != "shop" || d.Spec.DeletionPolicy != DeletionRetain {
		t.Errorf("database defaults: %+v (a schema is only dropped when asked)", d.Spec)
	}
}

func TestValidateUser(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*MySQLUser)
		field  string
	}{
		{"valid", func(*MySQLUser) {}, ""},
		{"reserved", func(u *MySQLUser) { u.Spec.User = "mysqlop" }, "spec.user"},
		{"quote in name", func(u *MySQLUser) { u.Spec.User = "a'b" }, "spec.user"},
		{"too long", func(u *MySQLUser) { u.Spec.User = strings.Repeat("a", 33) }, "spec.user"},
		{"host", func(u *MySQLUser) { u.Spec.Host = "a b" }, "spec.host"},
		{"no secret", func(u *MySQLUser) { u.Spec.PasswordSecretRef.Name = "" }, "spec.passwordSecretRef.name"},
		{"policy", func(u *MySQLUser) { u.Spec.DeletionPolicy = "Orphan" }, "spec.deletionPolicy"},
		{"injected privilege", func(u *MySQLUser) { u.Spec.Grants[0].Privileges = []string{"SELECT ON *.* TO x; --"} }, "spec.grants[0].privileges[0]"},
		{"global ALL", func(u *MySQLUser) { u.Spec.Grants[0].Database = "*"; u.Spec.Grants[0].Privileges = []string{"all"} }, "spec.grants[0].privileges[0]"},
		{"global SUPER", func(u *MySQLUser) { u.Spec.Grants[0].Database = "*"; u.Spec.Grants[0].Privileges = []string{"Super"} }, "spec.grants[0].privileges[0]"},
		{"global READ_ONLY ADMIN", func(u *MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Privileges = []string{"read_only  admin"}
		}, "spec.grants[0].privileges[0]"},
		{"global PROCESS is fine", func(u *MySQLUser) { u.Spec.Grants[0].Database = "*"; u.Spec.Grants[0].Privileges = []string{"PROCESS"} }, ""},
		{"global monitoring is fine", func(u *MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Privileges = []string{"process", "REPLICATION_CLIENT", "slave monitor", "SHOW DATABASES", "usage"}
		}, ""},
		{"global FILE", func(u *MySQLUser) { u.Spec.Grants[0].Database = "*"; u.Spec.Grants[0].Privileges = []string{"FILE"} }, "spec.grants[0].privileges[0]"},
		{"global SHUTDOWN", func(u *MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Privileges = []string{"PROCESS", "SHUTDOWN"}
		}, "spec.grants[0].privileges[1]"},
		{"global CONNECTION_ADMIN", func(u *MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Privileges = []string{"CONNECTION_ADMIN"}
		}, "spec.grants[0].privileges[0]"},
		{"global CREATE USER", func(u *MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Privileges = []string{"create user"}
		}, "spec.grants[0].privileges[0]"},
		{"global INSERT reaches mysql", func(u *MySQLUser) { u.Spec.Grants[0].Database = "*"; u.Spec.Grants[0].Privileges = []string{"INSERT"} }, "spec.grants[0].privileges[0]"},
		{"ALL on mysql", func(u *MySQLUser) { u.Spec.Grants[0].Database = "mysql"; u.Spec.Grants[0].Privileges = []string{"ALL"} }, "spec.grants[0].database"},
		{"SELECT on MySQL", func(u *MySQLUser) {
			u.Spec.Grants[0].Database = "MySQL"
			u.Spec.Grants[0].Privileges = []string{"SELECT"}
		}, "spec.grants[0].database"},
		{"pattern %", func(u *MySQLUser) { u.Spec.Grants[0].Database = "%" }, "spec.grants[0].database"},
		{"pattern m%", func(u *MySQLUser) { u.Spec.Grants[0].Database = "m%" }, "spec.grants[0].database"},
		{"pattern my_ql", func(u *MySQLUser) { u.Spec.Grants[0].Database = "my_ql" }, "spec.grants[0].database"},
		{"pattern info%", func(u *MySQLUser) { u.Spec.Grants[0].Database = "info%" }, "spec.grants[0].database"},
		{"escaped my\\_ql is a name", func(u *MySQLUser) { u.Spec.Grants[0].Database = `my\_ql` }, ""},
		{"pattern app_% is fine", func(u *MySQLUser) { u.Spec.Grants[0].Database = "app_%" }, ""},
		{"SELECT on performance_schema is fine", func(u *MySQLUser) {
			u.Spec.Grants[0].Database = "performance_schema"
			u.Spec.Grants[0].Privileges = []string{"SELECT"}
		}, ""},
		{"UPDATE on performance_schema", func(u *MySQLUser) {
			u.Spec.Grants[0].Database = "performance_schema"
			u.Spec.Grants[0].Privileges = []string{"SELECT", "UPDATE"}
		}, "spec.grants[0].privileges[1]"},
		{"ALL on s%s matches sys", func(u *MySQLUser) { u.Spec.Grants[0].Database = "s%s"; u.Spec.Grants[0].Privileges = []string{"ALL"} }, "spec.grants[0].privileges[0]"},
		{"ALL on a database is fine", func(u *MySQLUser) { u.Spec.Grants[0].Privileges = []string{"ALL"} }, ""},
		{"table without database", func(u *MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Table = "t"
			u.Spec.Grants[0].Privileges = []string{"PROCESS"}
		}, "spec.grants[0].table"},
		{"backtick in database", func(u *MySQLUser) { u.Spec.Grants[0].Database = "a`b" }, "spec.grants[0].database"},
		{"no privileges", func(u *MySQLUser) { u.Spec.Grants[0].Privileges = nil }, "spec.grants[0].privileges"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := validUser()
			tc.mutate(u)
			errs := ValidateUser(u)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.field {
				t.Fatalf("errors %v, want one on %s", errs, tc.field)
			}
		})
	}
}

func TestValidateDatabase(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*MySQLDatabase)
		field  string
	}{
		{"valid", func(*MySQLDatabase) {}, ""},
		{"system", func(d *MySQLDatabase) { d.Spec.Name = "MySQL" }, "spec.name"},
		{"backtick", func(d *MySQLDatabase) { d.Spec.Name = "a`b" }, "spec.name"},
		{"charset", func(d *MySQLDatabase) { d.Spec.CharacterSet = "utf8mb4;" }, "spec.characterSet"},
		{"collation", func(d *MySQLDatabase) { d.Spec.Collation = "A B" }, "spec.collation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &MySQLDatabase{Spec: MySQLDatabaseSpec{ClusterRef: ClusterReference{Name: "db"}, CharacterSet: "utf8mb4"}}
			d.Name = "shop"
			SetDatabaseDefaults(d)
			tc.mutate(d)
			errs := ValidateDatabase(d)
			if (tc.field == "") != (len(errs) == 0) || (tc.field != "" && errs[0].Field != tc.field) {
				t.Fatalf("errors %v, want one on %q", errs, tc.field)
			}
		})
	}
}

// crdRules returns every CEL rule of a generated CRD.
func crdRules(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile("../../../../contrib/manifests/crds/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var rules []string
	var walk func(any)
	walk = func(n any) {
		switch n := n.(type) {
		case map[string]any:
			if vs, ok := n["x-kubernetes-validations"].([]any); ok {
				for _, v := range vs {
					rules = append(rules, v.(map[string]any)["rule"].(string))
				}
			}
			for _, c := range n {
				walk(c)
			}
		case []any:
			for _, c := range n {
				walk(c)
			}
		}
	}
	walk(doc)
	return rules
}

// listIn returns the quoted strings of the first rule matching re's list group.
func listIn(t *testing.T, rules []string, re string) []string {
	t.Helper()
	for _, r := range rules {
		if m := regexp.MustCompile(re).FindStringSubmatch(r); m != nil {
			var out []string
			for _, k := range strings.Split(m[1], ",") {
				out = append(out, strings.Trim(k, "' "))
			}
			return slices.Sorted(slices.Values(out))
		}
	}
	t.Fatalf("no rule matches %s in %q", re, rules)
	return nil
}

// The CRDs' CEL rules and the Go validation must refuse the same names and privileges.
func TestCRDUserRulesMatchGo(t *testing.T) {
	users := crdRules(t, "mysqlop.io_mysqlusers.yaml")
	if got, want := listIn(t, users, `^!\(self in \[([^\]]*)\]\)$`), slices.Sorted(slices.Values(ReservedUsers)); !slices.Equal(got, want) {
		t.Errorf("CRD reserved users %v, Go %v", got, want)
	}
	if got, want := listIn(t, users, `^self.database != '\*' \|\| .* in \[([^\]]*)\]\)$`), slices.Sorted(slices.Values(GlobalPrivileges)); !slices.Equal(got, want) {
		t.Errorf("CRD global privileges %v, Go %v", got, want)
	}
	if got, want := listIn(t, users, `^!\(self.database.lowerAscii\(\) in \[([^\]]*)\]`), slices.Sorted(slices.Values(closedSchemas)); !slices.Equal(got, want) {
		t.Errorf("CRD closed schemas %v, Go %v", got, want)
	}
	dbs := crdRules(t, "mysqlop.io_mysqldatabases.yaml")
	if got, want := listIn(t, dbs, `lowerAscii\(\) in \[([^\]]*)\]\)$`), slices.Sorted(slices.Values(SystemSchemas)); !slices.Equal(got, want) {
		t.Errorf("CRD system schemas %v, Go %v", got, want)
	}
}
