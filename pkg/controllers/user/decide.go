package user

import (
	"fmt"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// desiredGrants turns a defaulted spec's grants into the form the server reports.
func desiredGrants(s *v1alpha1.MySQLUserSpec) (mysql.Grants, error) {
	g := mysql.Grants{}
	for i, gr := range s.Grants {
		if err := g.Add(mysql.Scope{Database: gr.Database, Table: gr.Table}, gr.Privileges, gr.GrantOption); err != nil {
			return nil, fmt.Errorf("spec.grants[%d]: %w", i, err)
		}
	}
	return g, nil
}

// change is what one reconcile does to an account.
type change struct {
	// Statements run in order on the primary.
	Statements []mysql.Statement
	// Event says what changed (its argument is the account); nil when nothing changes.
	Event *events.Event
}

// plan decides the statements that make the account match spec. state is nil when the
// account does not exist; rotate says the password Secret changed since it was last set.
func plan(flavor mysql.Flavor, spec *v1alpha1.MySQLUserSpec, password string, state *mysql.AccountState, rotate bool) (change, error) {
	a := mysql.Account{User: spec.User, Host: spec.Host}
	// A subject implies TLS: the server records one requirement, so the options do too.
	opts := mysql.AccountOptions{MaxUserConnections: spec.MaxUserConnections, RequireTLS: spec.RequireTLS && spec.RequireSubject == "", RequireSubject: spec.RequireSubject}
	want, err := desiredGrants(spec)
	if err != nil {
		return change{}, err
	}
	want = flavor.ReportedGrants(want)
	if state == nil {
		stmts := append([]mysql.Statement{flavor.CreateAccount(a, password, opts)}, mysql.DiffGrants(a, mysql.Grants{}, want)...)
		return change{Statements: stmts, Event: &events.UserCreated}, nil
	}
	var c change
	if rotate {
		c.Statements = append(c.Statements, flavor.SetPassword(a, password))
		c.Event = &events.PasswordRotated
	}
	grants := mysql.DiffGrants(a, state.Grants, want)
	if state.Options != opts || len(grants) > 0 {
		if state.Options != opts {
			c.Statements = append(c.Statements, mysql.AlterAccountOptions(a, opts))
		}
		c.Statements = append(c.Statements, grants...)
		if c.Event == nil {
			c.Event = &events.UserUpdated
		} else {
			c.Event = &events.PasswordRotatedAndUpdated
		}
	}
	return c, nil
}
