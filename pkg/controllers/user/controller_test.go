package user

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/fixture"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

const ns = fixture.Namespace

func passwordSecret(pw, version string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-pw", ResourceVersion: version},
		Data: map[string][]byte{v1alpha1.DefaultSecretKey: []byte(pw)}}
}

func appUser() *v1alpha1.MySQLUser {
	return &v1alpha1.MySQLUser{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Generation: 1},
		Spec: v1alpha1.MySQLUserSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, Host: "%",
			PasswordSecretRef: v1alpha1.SecretKeyRef{Name: "app-pw"},
			Grants:            []v1alpha1.Grant{{Privileges: []string{"SELECT"}, Database: "shop"}},
			DeletionPolicy:    v1alpha1.DeletionDelete}}
}

func ready(f *fixture.Fixture) *metav1.Condition {
	u := fixture.Get(f, &v1alpha1.MySQLUser{}, "app")
	return meta.FindStatusCondition(u.Status.Conditions, v1alpha1.ConditionReady)
}

// canLogIn reports whether app logs in to s with pw.
func canLogIn(t *testing.T, s *mariadb.Server, pw string) bool {
	db, err := mysql.Open(mysql.ConnConfig{Addr: s.Addr(), User: "app", Password: pw, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return db.PingContext(context.Background()) == nil
}

// A MySQLUser's account is created on the primary with its grants, an in-sync user costs
// nothing, a changed Secret rotates the password, and deletion drops the account.
func TestUserLifecycleOnMariaDB(t *testing.T) {
	ctx := context.Background()
	p, f, c := start(t, passwordSecret("first-Pa55", "1"))

	f.Sync(c.Sync, "app")
	if cond := ready(f); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v", cond)
	}
	if !canLogIn(t, p.Server, "first-Pa55") {
		t.Fatal("the account does not take its password")
	}
	state, err := p.Server.Admin().Account(ctx, mysql.Account{User: "app", Host: "%"})
	if err != nil || state == nil {
		t.Fatalf("account: %+v %v", state, err)
	}
	if ev := f.Events(); len(ev) != 1 || ev[0] != "Normal UserCreated Created account 'app'@'%'" {
		t.Errorf("events %q", ev)
	}
	if u := fixture.Get(f, &v1alpha1.MySQLUser{}, "app"); !slices.Contains(u.Finalizers, v1alpha1.FinalizerUser) {
		t.Errorf("finalizers %v", u.Finalizers)
	}

	f.Sync(c.Sync, "app")
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("an in-sync user wrote %q", w)
	}

	f.Update(passwordSecret("second-Pa55", "2"))
	waitFor(t, func() bool {
		s, found, err := c.secrets.Get(ctx, cacheKey("app-pw"))
		return err == nil && found && s.ResourceVersion == "2"
	})
	f.Sync(c.Sync, "app")
	if !canLogIn(t, p.Server, "second-Pa55") || canLogIn(t, p.Server, "first-Pa55") {
		t.Error("the password was not rotated")
	}
	if ev := f.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal PasswordRotated ") {
		t.Errorf("events %q", ev)
	}

	u := fixture.Get(f, &v1alpha1.MySQLUser{}, "app")
	now := metav1.Now()
	u.DeletionTimestamp = &now
	f.Update(u)
	f.Sync(c.Sync, "app")
	if state, err := p.Server.Admin().Account(ctx, mysql.Account{User: "app", Host: "%"}); err != nil || state != nil {
		t.Errorf("after deletion: account %+v %v", state, err)
	}
	if u := fixture.Get(f, &v1alpha1.MySQLUser{}, "app"); len(u.Finalizers) != 0 {
		t.Errorf("finalizers after the drop: %v", u.Finalizers)
	}
}

// A missing password Secret is a condition and one Warning, not an error; nothing is created.
func TestUserWaitsForItsSecret(t *testing.T) {
	ctx := context.Background()
	p, f, c := start(t)
	f.Sync(c.Sync, "app")
	if cond := ready(f); cond == nil || cond.Reason != v1alpha1.ReasonSecretNotFound {
		t.Fatalf("Ready %+v", cond)
	}
	if ev := f.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning SecretNotFound ") {
		t.Errorf("events %q", ev)
	}
	f.Sync(c.Sync, "app")
	if ev := f.Events(); len(ev) != 0 {
		t.Errorf("second sync emitted %q", ev)
	}
	if state, _ := p.Server.Admin().Account(ctx, mysql.Account{User: "app", Host: "%"}); state != nil {
		t.Error("an account was created without a password")
	}
}

// start runs the controller over a real primary, the user app and objs, with its Secret
// watches started.
func start(t *testing.T, objs ...runtime.Object) (*fixture.Primary, *fixture.Fixture, *Controller) {
	t.Helper()
	p := fixture.StartPrimary(t)
	f := fixture.New(t, append([]runtime.Object{p.Cluster, p.Credentials, appUser()}, objs...)...)
	c, err := New(f.Kube, f.MySQL, f.Set, f.Recorder, p.Resolve)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.secrets.Start(ctx.Done())
	return p, f, c
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 5 s")
}

func cacheKey(name string) cache.ObjectName { return cache.ObjectName{Namespace: ns, Name: name} }
