package user

import (
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

func TestPlan(t *testing.T) {
	spec := &v1alpha1.MySQLUserSpec{User: "app", Host: "%", MaxUserConnections: 3,
		Grants: []v1alpha1.Grant{{Privileges: []string{"SELECT"}, Database: "app", Table: "*"}}}
	want, err := desiredGrants(spec)
	if err != nil {
		t.Fatal(err)
	}
	matching := &mysql.AccountState{Options: mysql.AccountOptions{MaxUserConnections: 3}, Grants: want}
	for _, tc := range []struct {
		name    string
		state   *mysql.AccountState
		rotate  bool
		event   *events.Event
		queries []string
	}{
		{"absent", nil, false, &events.UserCreated, []string{
			"CREATE USER ?@? IDENTIFIED BY PASSWORD ? REQUIRE NONE WITH MAX_USER_CONNECTIONS 3",
			"GRANT SELECT ON `app`.* TO ?@?"}},
		{"matching", matching, false, nil, nil},
		{"rotated", matching, true, &events.PasswordRotated, []string{"ALTER USER ?@? IDENTIFIED BY PASSWORD ?"}},
		{"drifted", &mysql.AccountState{Grants: mysql.Grants{{Database: "app", Table: "*"}: {Privileges: []string{"DELETE", "SELECT"}}}},
			false, &events.UserUpdated, []string{
				"ALTER USER ?@? REQUIRE NONE WITH MAX_USER_CONNECTIONS 3",
				"REVOKE DELETE ON `app`.* FROM ?@?"}},
		{"rotated and drifted", &mysql.AccountState{Options: mysql.AccountOptions{MaxUserConnections: 3}}, true, &events.PasswordRotatedAndUpdated, []string{
			"ALTER USER ?@? IDENTIFIED BY PASSWORD ?",
			"GRANT SELECT ON `app`.* TO ?@?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := plan(mysql.MariaDB, spec, "pw", tc.state, tc.rotate)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range c.Statements {
				got = append(got, s.Query)
			}
			if c.Event != tc.event || len(got) != len(tc.queries) {
				t.Fatalf("event %v statements %q; want %v %q", c.Event, got, tc.event, tc.queries)
			}
			for i := range got {
				if got[i] != tc.queries[i] {
					t.Errorf("statement %d: %q, want %q", i, got[i], tc.queries[i])
				}
			}
		})
	}
}

func TestOwnsAccount(t *testing.T) {
	a := mysql.Account{User: "app", Host: "%"}
	for _, tc := range []struct {
		name string
		st   v1alpha1.MySQLUserStatus
		want bool
	}{
		{"recorded", v1alpha1.MySQLUserStatus{Account: "'app'@'%'"}, true},
		{"recorded another", v1alpha1.MySQLUserStatus{Account: "'app'@'10.%'", PasswordSecretVersion: "s/password@1"}, false},
		{"an earlier version set its password", v1alpha1.MySQLUserStatus{PasswordSecretVersion: "s/password@1"}, true},
		{"never reconciled", v1alpha1.MySQLUserStatus{}, false},
	} {
		if got := ownsAccount(tc.st, a); got != tc.want {
			t.Errorf("%s: ownsAccount = %v", tc.name, got)
		}
	}
}
