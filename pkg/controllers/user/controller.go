// Package user is the MySQLUser controller: it makes an account exist on the referenced
// cluster's primary with the password from a Secret key, the listed grants (revoking the
// rest) and limits; sets the password again when the Secret changes; and drops the account
// when the MySQLUser is deleted, unless its deletionPolicy is Retain.
//
// Only the Secrets that users reference are watched (package secretwatch), and an index
// from Secret to users turns a Secret's change into the users to reconcile.
package user

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/controllers/sqlobject"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
	listers "github.com/mysqlop/mysql-operator/pkg/generated/listers/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/secretwatch"
)

// Name is the controller's name in logs, metrics and its workqueue.
const Name = "user"

// Index names on the MySQLUser informers.
const (
	bySecret  = "secret"
	byCluster = "cluster"
)

// Controller reconciles MySQLUsers.
type Controller struct {
	mysql     versioned.Interface
	users     listers.MySQLUserLister
	index     cache.Indexer
	connector *sqlobject.Connector
	secrets   *secretwatch.Watcher
	recorder  record.EventRecorder
	loop      *ctrl.Loop
}

// New registers the controller's informers and indexes with set and returns the controller.
func New(kube kubernetes.Interface, client versioned.Interface, set *informerset.Set, recorder record.EventRecorder, resolve resources.Resolver) (*Controller, error) {
	userInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLUsers().Informer()
	})
	clusterInf, secretInf := ctrl.ClusterCaches(set)
	if err := ctrl.AddIndex(userInf, bySecret, func(obj any) (string, string) {
		u := obj.(*v1alpha1.MySQLUser)
		return u.Namespace, u.Spec.PasswordSecretRef.Name
	}); err != nil {
		return nil, err
	}
	if err := ctrl.AddIndex(userInf, byCluster, func(obj any) (string, string) {
		u := obj.(*v1alpha1.MySQLUser)
		return u.Namespace, u.Spec.ClusterRef.Name
	}); err != nil {
		return nil, err
	}
	if resolve == nil {
		resolve = resources.DNSResolver
	}
	c := &Controller{
		mysql: client,
		users: listers.NewMySQLUserLister(userInf.Indexer()),
		index: userInf.Indexer(),
		connector: &sqlobject.Connector{
			Clusters: listers.NewMySQLClusterLister(clusterInf.Indexer()),
			Secrets:  corelisters.NewSecretLister(secretInf.Indexer()),
			Resolve:  resolve,
		},
		recorder: recorder,
	}
	c.loop = ctrl.New(Name, "mysqluser", c.Sync)
	c.loop.WaitFor(userInf.HasSynced, clusterInf.HasSynced, secretInf.HasSynced)
	bySecretRef := c.loop.EnqueueIndexed(c.index, bySecret)
	c.secrets = secretwatch.New(kube, func(s cache.ObjectName) { bySecretRef(s.String()) })
	// A deleted user frees its account for another MySQLUser naming it.
	siblings := c.loop.EnqueueIndexed(c.index, byCluster)
	if err := userInf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if u, ok := objects.FromEvent[*v1alpha1.MySQLUser](obj); ok {
			siblings(u.Namespace + "/" + u.Spec.ClusterRef.Name)
		}
	}}); err != nil {
		return nil, fmt.Errorf("watch users: %w", err)
	}
	if err := userInf.AddEventHandler(c.loop.ObjectHandler()); err != nil {
		return nil, fmt.Errorf("watch users: %w", err)
	}
	if err := clusterInf.AddEventHandler(ctrl.ClusterHandler(c.loop.EnqueueIndexed(c.index, byCluster))); err != nil {
		return nil, fmt.Errorf("watch clusters: %w", err)
	}
	return c, nil
}

// ownsAccount: the MySQLUser whose status is st created or adopted a. A status written by an
// earlier version has no account but a password version: that MySQLUser set its password.
func ownsAccount(st v1alpha1.MySQLUserStatus, a mysql.Account) bool {
	return st.Account == a.String() || st.Account == "" && st.PasswordSecretVersion != ""
}

func userStatus(u *v1alpha1.MySQLUser) *v1alpha1.MySQLUserStatus { return &u.Status }

// accountOwner returns the name of the MySQLUser that manages u's account: of the objects
// naming the same cluster, user and host, the oldest (then the first by name).
func (c *Controller) accountOwner(u *v1alpha1.MySQLUser) string {
	return sqlobject.IndexedOwner(c.index, byCluster, u.Namespace+"/"+u.Spec.ClusterRef.Name, u, func(o *v1alpha1.MySQLUser) bool {
		other := o.DeepCopy()
		v1alpha1.SetUserDefaults(other)
		return other.Spec.User == u.Spec.User && other.Spec.Host == u.Spec.Host
	})
}

// Run watches referenced Secrets and runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.secrets.Start(ctx.Done())
	return c.loop.Run(ctx, workers)
}

// Sync reconciles one MySQLUser. Waiting states (no Secret, no cluster, no primary) return
// nil after a condition: the watches bring the user back when they change.
func (c *Controller) Sync(ctx context.Context, key cache.ObjectName) (ctrl.Result, error) {
	cached, err := c.users.MySQLUsers(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.secrets.Forget(key.String())
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get user %s: %w", key, err)
	}
	u := cached.DeepCopy()
	v1alpha1.SetUserDefaults(u)
	if u.DeletionTimestamp != nil {
		return ctrl.Result{}, c.finalize(ctx, cached, u)
	}
	if errs := v1alpha1.ValidateUser(u); len(errs) > 0 {
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonInvalidSpec, errs.ToAggregate().Error(), &events.InvalidSpec)
	}
	if owner := c.accountOwner(u); owner != u.Name {
		// The older MySQLUser owns the account: two objects setting one account's password and
		// grants would undo each other. Nothing is changed; deleting the owner frees it.
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonConflict, fmt.Sprintf("MySQLUser %s already manages account '%s'@'%s' in MySQLCluster %s: nothing is done here; delete this object or name another account", owner, u.Spec.User, u.Spec.Host, u.Spec.ClusterRef.Name), &events.InvalidSpec)
	}
	if cached, err = objects.AddFinalizer(ctx, cached, v1alpha1.FinalizerUser, c.mysql.MysqlopV1alpha1().MySQLUsers(key.Namespace).Update); err != nil {
		return ctrl.Result{}, err
	}

	ref := u.Spec.PasswordSecretRef
	secretKey := cache.ObjectName{Namespace: u.Namespace, Name: ref.Name}
	c.secrets.Reference(key.String(), secretKey)
	sec, found, err := c.secrets.Get(ctx, secretKey)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !found {
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonSecretNotFound, fmt.Sprintf("Secret %s not found: the account is not created or changed until it exists", ref.Name), &events.SecretNotFound)
	}
	password := sec.Data[ref.Key]
	if len(password) == 0 {
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonSecretNotFound, fmt.Sprintf("Secret %s has no key %q, or it is empty", ref.Name, ref.Key), &events.SecretNotFound)
	}

	in, err := c.connector.Primary(ctx, u.Namespace, u.Spec.ClusterRef.Name)
	if nr, ok := sqlobject.IsNotReady(err); ok {
		return ctrl.Result{}, c.notReady(ctx, cached, nr.Reason, nr.Message, &events.ClusterNotReady)
	}
	if err != nil {
		_ = c.notReady(ctx, cached, v1alpha1.ReasonClusterUnreachable, err.Error(), nil)
		return ctrl.Result{}, err
	}
	defer in.DB.Close()

	a := mysql.Account{User: u.Spec.User, Host: u.Spec.Host}
	state, err := in.Account(ctx, a)
	if err != nil {
		_ = c.notReady(ctx, cached, v1alpha1.ReasonSQLError, err.Error(), &events.SQLFailed)
		return ctrl.Result{}, err
	}
	switch {
	case state != nil && !ownsAccount(cached.Status, a) && !u.Spec.AdoptExisting:
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonAccountExists, fmt.Sprintf("Account %s exists and this MySQLUser did not create it: it is left alone "+
			"(spec.adoptExisting takes it over: its password and grants then follow the spec)", a), &events.InvalidSpec)
	case state != nil && !ownsAccount(cached.Status, a) && len(state.Unmanaged) > 0:
		// Adopting would keep grants the spec cannot express (and so cannot bound): a
		// MySQLUser could take over more than it may hold.
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonAccountExists, fmt.Sprintf("Account %s exists with %s grants the spec cannot express: it is not adopted until they are revoked",
			a, strings.Join(state.Unmanaged, ", ")), &events.InvalidSpec)
	case state == nil && cached.Status.Account != a.String():
		// Recorded before CREATE USER: were the status write after it lost, the account
		// would look like someone else's at the next reconcile.
		st := cached.Status.DeepCopy()
		st.Account = a.String()
		if cached, err = objects.UpdateStatus(ctx, cached, st, userStatus, c.mysql.MysqlopV1alpha1().MySQLUsers(cached.Namespace).UpdateStatus); err != nil {
			return ctrl.Result{}, err
		}
	}
	// A new Secret, key or Secret version, or a physical restore that brought back the
	// account as it was in the backup: set the password again.
	version := fmt.Sprintf("%s/%s@%s", ref.Name, ref.Key, sec.ResourceVersion)
	if cl, err := c.connector.Clusters.MySQLClusters(u.Namespace).Get(u.Spec.ClusterRef.Name); err == nil {
		if restored := cl.Annotations[v1alpha1.AnnotationDataRestored]; restored != "" {
			version += " restored:" + restored
		}
	}
	rotate := cached.Status.PasswordSecretVersion != version
	ch, err := plan(in.Flavor, &u.Spec, string(password), state, rotate)
	if err != nil {
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonInvalidSpec, err.Error(), &events.InvalidSpec)
	}
	if err := in.Exec(ctx, ch.Statements...); err != nil {
		_ = c.notReady(ctx, cached, v1alpha1.ReasonSQLError, err.Error(), &events.SQLFailed)
		return ctrl.Result{}, fmt.Errorf("reconcile account %s: %w", a, err)
	}
	if ch.Event != nil {
		ch.Event.Record(c.recorder, cached, a)
		klog.FromContext(ctx).Info("Reconciled account", "user", klog.KObj(cached), "change", ch.Event.Reason)
	}
	st := cached.Status.DeepCopy()
	st.PasswordSecretVersion = version
	st.Account = a.String()
	st.ObservedGeneration = cached.Generation
	objects.SetReady(&st.Conditions, cached.Generation, true, v1alpha1.ReasonReconciled, fmt.Sprintf("Account %s matches the spec", a))
	return ctrl.Result{}, c.writeStatus(ctx, cached, st)
}

// finalize drops the account of a deleted MySQLUser per its deletion policy, then releases
// the finalizer. A cluster that is gone has nothing to drop and never blocks the deletion.
func (c *Controller) finalize(ctx context.Context, cached, u *v1alpha1.MySQLUser) error {
	if !objects.HasFinalizer(cached, v1alpha1.FinalizerUser) {
		c.secrets.Forget(cache.MetaObjectToName(cached).String())
		return nil
	}
	a := mysql.Account{User: u.Spec.User, Host: u.Spec.Host}
	gone, err := c.connector.Gone(u.Namespace, u.Spec.ClusterRef.Name)
	if err != nil {
		return err
	}
	switch owner := c.accountOwner(u); {
	case gone:
		events.RetainedClusterGone.Record(c.recorder, cached, u.Spec.ClusterRef.Name)
	case owner != u.Name:
		events.RetainedForOwner.Record(c.recorder, cached, "account "+a.String(), "MySQLUser "+owner)
	case u.Spec.DeletionPolicy == v1alpha1.DeletionRetain:
		events.RetainedByPolicy.Record(c.recorder, cached, "account "+a.String())
	case !ownsAccount(cached.Status, a):
		events.RetainedNotOwned.Record(c.recorder, cached, "account "+a.String())
	default:
		in, err := c.connector.Primary(ctx, u.Namespace, u.Spec.ClusterRef.Name)
		if nr, ok := sqlobject.IsNotReady(err); ok {
			return c.notReady(ctx, cached, v1alpha1.ReasonDeleting, "Waiting to drop the account: "+nr.Message, nil)
		}
		if err != nil {
			return err
		}
		defer in.DB.Close()
		if err := in.Exec(ctx, mysql.DropAccount(a)); err != nil {
			_ = c.notReady(ctx, cached, v1alpha1.ReasonSQLError, err.Error(), &events.SQLFailed)
			return fmt.Errorf("drop account %s: %w", a, err)
		}
		events.UserDropped.Record(c.recorder, cached, a)
	}
	if err := objects.RemoveFinalizers(ctx, cached, c.mysql.MysqlopV1alpha1().MySQLUsers(u.Namespace).Update, v1alpha1.FinalizerUser); err != nil {
		return err
	}
	c.secrets.Forget(cache.MetaObjectToName(cached).String())
	return nil
}

// notReady records why the account does not match the spec: a Ready=False condition, and a
// Warning event named eventReason when the condition changes (none when empty).
func (c *Controller) notReady(ctx context.Context, cached *v1alpha1.MySQLUser, reason, message string, ev *events.Event) error {
	st := cached.Status.DeepCopy()
	if objects.SetReady(&st.Conditions, cached.Generation, false, reason, message) && ev != nil {
		ev.Record(c.recorder, cached, message)
	}
	st.ObservedGeneration = cached.Generation
	return c.writeStatus(ctx, cached, st)
}

// writeStatus writes st through the status subresource unless it equals the cached status.
func (c *Controller) writeStatus(ctx context.Context, cached *v1alpha1.MySQLUser, st *v1alpha1.MySQLUserStatus) error {
	return objects.WriteStatus(ctx, cached, st, userStatus, c.mysql.MysqlopV1alpha1().MySQLUsers(cached.Namespace).UpdateStatus)
}
