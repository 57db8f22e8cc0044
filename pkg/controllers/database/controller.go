// Package database is the MySQLDatabase controller: it makes a schema exist on the
// referenced cluster's primary with the requested character set and collation, and drops it
// when the MySQLDatabase is deleted only if its deletionPolicy is Delete (the default,
// Retain, keeps the data).
package database

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
)

// Name is the controller's name in logs, metrics and its workqueue.
const Name = "database"

const byCluster = "cluster"

// Controller reconciles MySQLDatabases.
type Controller struct {
	mysql     versioned.Interface
	databases listers.MySQLDatabaseLister
	index     cache.Indexer
	connector *sqlobject.Connector
	recorder  record.EventRecorder
	loop      *ctrl.Loop
}

// New registers the controller's informers and index with set and returns the controller.
func New(client versioned.Interface, set *informerset.Set, recorder record.EventRecorder, resolve resources.Resolver) (*Controller, error) {
	dbInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLDatabases().Informer()
	})
	clusterInf, secretInf := ctrl.ClusterCaches(set)
	if err := ctrl.AddIndex(dbInf, byCluster, func(obj any) (string, string) {
		d := obj.(*v1alpha1.MySQLDatabase)
		return d.Namespace, d.Spec.ClusterRef.Name
	}); err != nil {
		return nil, err
	}
	if resolve == nil {
		resolve = resources.DNSResolver
	}
	c := &Controller{
		mysql:     client,
		databases: listers.NewMySQLDatabaseLister(dbInf.Indexer()),
		index:     dbInf.Indexer(),
		connector: &sqlobject.Connector{
			Clusters: listers.NewMySQLClusterLister(clusterInf.Indexer()),
			Secrets:  corelisters.NewSecretLister(secretInf.Indexer()),
			Resolve:  resolve,
		},
		recorder: recorder,
	}
	c.loop = ctrl.New(Name, "mysqldatabase", c.Sync)
	c.loop.WaitFor(dbInf.HasSynced, clusterInf.HasSynced, secretInf.HasSynced)
	if err := dbInf.AddEventHandler(c.loop.ObjectHandler()); err != nil {
		return nil, fmt.Errorf("watch databases: %w", err)
	}
	if err := clusterInf.AddEventHandler(ctrl.ClusterHandler(c.loop.EnqueueIndexed(c.index, byCluster))); err != nil {
		return nil, fmt.Errorf("watch clusters: %w", err)
	}
	return c, nil
}

// createdSchema: the MySQLDatabase whose status is st created the schema name. A status of an
// earlier version has no schema but the server's character set: it reconciled the schema,
// which it is taken to have created (as those versions created or took any).
func createdSchema(st v1alpha1.MySQLDatabaseStatus, name string) bool {
	return st.Schema == name || st.Schema == "" && !st.Adopted && st.CharacterSet != ""
}

func databaseStatus(d *v1alpha1.MySQLDatabase) *v1alpha1.MySQLDatabaseStatus { return &d.Status }

// schemaOwner returns the name of the MySQLDatabase that manages d's schema.
func (c *Controller) schemaOwner(d *v1alpha1.MySQLDatabase) string {
	return sqlobject.IndexedOwner(c.index, byCluster, d.Namespace+"/"+d.Spec.ClusterRef.Name, d, func(o *v1alpha1.MySQLDatabase) bool {
		other := o.DeepCopy()
		v1alpha1.SetDatabaseDefaults(other)
		return other.Spec.Name == d.Spec.Name
	})
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error { return c.loop.Run(ctx, workers) }

// Sync reconciles the MySQLDatabase key.
func (c *Controller) Sync(ctx context.Context, key cache.ObjectName) (ctrl.Result, error) {
	cached, err := c.databases.MySQLDatabases(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get database %s: %w", key, err)
	}
	d := cached.DeepCopy()
	v1alpha1.SetDatabaseDefaults(d)
	if d.DeletionTimestamp != nil {
		return ctrl.Result{}, c.finalize(ctx, cached, d)
	}
	if errs := v1alpha1.ValidateDatabase(d); len(errs) > 0 {
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonInvalidSpec, errs.ToAggregate().Error(), &events.InvalidSpec)
	}
	if owner := c.schemaOwner(d); owner != d.Name {
		// Two objects managing one schema would undo each other, and either could drop it.
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonConflict, fmt.Sprintf("MySQLDatabase %s already manages database %s in MySQLCluster %s: nothing is done here; delete this object or name another database", owner, d.Spec.Name, d.Spec.ClusterRef.Name), &events.InvalidSpec)
	}
	if cached, err = objects.AddFinalizer(ctx, cached, v1alpha1.FinalizerDatabase, c.mysql.MysqlopV1alpha1().MySQLDatabases(key.Namespace).Update); err != nil {
		return ctrl.Result{}, err
	}
	in, err := c.connector.Primary(ctx, d.Namespace, d.Spec.ClusterRef.Name)
	if nr, ok := sqlobject.IsNotReady(err); ok {
		return ctrl.Result{}, c.notReady(ctx, cached, nr.Reason, nr.Message, &events.ClusterNotReady)
	}
	if err != nil {
		_ = c.notReady(ctx, cached, v1alpha1.ReasonClusterUnreachable, err.Error(), nil)
		return ctrl.Result{}, err
	}
	defer in.DB.Close()

	name := d.Spec.Name
	want := mysql.Schema{CharacterSet: d.Spec.CharacterSet, Collation: d.Spec.Collation}
	have, err := in.Schema(ctx, name)
	if err != nil {
		_ = c.notReady(ctx, cached, v1alpha1.ReasonSQLError, err.Error(), &events.SQLFailed)
		return ctrl.Result{}, err
	}
	created := createdSchema(cached.Status, name)
	switch {
	case have != nil && !created && !d.Spec.AdoptExisting:
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonSchemaExists, fmt.Sprintf("Database %s exists and this MySQLDatabase did not create it: it is left alone "+
			"(spec.adoptExisting manages it, and never drops it)", name), &events.InvalidSpec)
	case have == nil && cached.Status.Schema != name:
		// Recorded before CREATE DATABASE: were the status write after it lost, the schema
		// would look like someone else's, and never be dropped.
		st := cached.Status.DeepCopy()
		st.Schema, st.Adopted = name, false
		if cached, err = objects.UpdateStatus(ctx, cached, st, databaseStatus, c.mysql.MysqlopV1alpha1().MySQLDatabases(cached.Namespace).UpdateStatus); err != nil {
			return ctrl.Result{}, err
		}
		created = true
	}
	stmt, ev, err := plan(name, want, have)
	if err != nil {
		return ctrl.Result{}, c.notReady(ctx, cached, v1alpha1.ReasonInvalidSpec, err.Error(), &events.InvalidSpec)
	}
	if err := in.Exec(ctx, stmt); err != nil {
		_ = c.notReady(ctx, cached, v1alpha1.ReasonSQLError, err.Error(), &events.SQLFailed)
		return ctrl.Result{}, fmt.Errorf("reconcile database %s: %w", name, err)
	}
	if ev != nil {
		ev.Record(c.recorder, cached, name)
		klog.FromContext(ctx).Info("Reconciled database", "database", klog.KObj(cached), "change", ev.Reason)
		if have, err = in.Schema(ctx, name); err != nil || have == nil {
			return ctrl.Result{}, fmt.Errorf("read database %s after %s: %w", name, ev.Reason, err)
		}
	}
	st := cached.Status.DeepCopy()
	st.ObservedGeneration = cached.Generation
	st.CharacterSet, st.Collation = have.CharacterSet, have.Collation
	st.Database = name
	if created {
		st.Schema = name
	} else {
		st.Adopted = true
	}
	objects.SetReady(&st.Conditions, cached.Generation, true, v1alpha1.ReasonReconciled, fmt.Sprintf("Database %s matches the spec", name))
	return ctrl.Result{}, c.writeStatus(ctx, cached, st)
}

// plan decides the one statement (if any) that makes the schema match: have is nil when
// it does not exist. Unset character set or collation accept what the server has.
func plan(name string, want mysql.Schema, have *mysql.Schema) (mysql.Statement, *events.Event, error) {
	if have == nil {
		s, err := mysql.CreateSchema(name, want)
		return s, &events.DatabaseCreated, err
	}
	if (want.CharacterSet == "" || want.CharacterSet == have.CharacterSet) && (want.Collation == "" || want.Collation == have.Collation) {
		return mysql.Statement{}, nil, nil
	}
	s, err := mysql.AlterSchema(name, want)
	return s, &events.DatabaseUpdated, err
}

// finalize drops the schema of a deleted MySQLDatabase only under deletionPolicy Delete,
// then releases the finalizer. A cluster that is gone never blocks the deletion.
func (c *Controller) finalize(ctx context.Context, cached, d *v1alpha1.MySQLDatabase) error {
	if !objects.HasFinalizer(cached, v1alpha1.FinalizerDatabase) {
		return nil
	}
	gone, err := c.connector.Gone(d.Namespace, d.Spec.ClusterRef.Name)
	if err != nil {
		return err
	}
	switch {
	case gone:
		events.RetainedClusterGone.Record(c.recorder, cached, d.Spec.ClusterRef.Name)
	case d.Spec.DeletionPolicy != v1alpha1.DeletionDelete:
		events.RetainedByPolicy.Record(c.recorder, cached, "database "+d.Spec.Name+" and its data")
	case c.schemaOwner(d) != d.Name:
		events.RetainedForOwner.Record(c.recorder, cached, "database "+d.Spec.Name, "MySQLDatabase "+c.schemaOwner(d))
	case !createdSchema(cached.Status, d.Spec.Name):
		events.RetainedNotCreated.Record(c.recorder, cached, "database "+d.Spec.Name+" and its data")
	default:
		in, err := c.connector.Primary(ctx, d.Namespace, d.Spec.ClusterRef.Name)
		if nr, ok := sqlobject.IsNotReady(err); ok {
			return c.notReady(ctx, cached, v1alpha1.ReasonDeleting, "Waiting to drop the database: "+nr.Message, nil)
		}
		if err != nil {
			return err
		}
		defer in.DB.Close()
		if err := in.Exec(ctx, mysql.DropSchema(d.Spec.Name)); err != nil {
			_ = c.notReady(ctx, cached, v1alpha1.ReasonSQLError, err.Error(), &events.SQLFailed)
			return fmt.Errorf("drop database %s: %w", d.Spec.Name, err)
		}
		events.DatabaseDropped.Record(c.recorder, cached, d.Spec.Name)
	}
	return objects.RemoveFinalizers(ctx, cached, c.mysql.MysqlopV1alpha1().MySQLDatabases(d.Namespace).Update, v1alpha1.FinalizerDatabase)
}

// notReady records a Ready=False condition, with a Warning event on a change of reason.
func (c *Controller) notReady(ctx context.Context, cached *v1alpha1.MySQLDatabase, reason, message string, ev *events.Event) error {
	st := cached.Status.DeepCopy()
	if objects.SetReady(&st.Conditions, cached.Generation, false, reason, message) && ev != nil {
		ev.Record(c.recorder, cached, message)
	}
	st.ObservedGeneration = cached.Generation
	return c.writeStatus(ctx, cached, st)
}

// writeStatus writes st through the status subresource unless it equals the cached status.
func (c *Controller) writeStatus(ctx context.Context, cached *v1alpha1.MySQLDatabase, st *v1alpha1.MySQLDatabaseStatus) error {
	return objects.WriteStatus(ctx, cached, st, databaseStatus,
		c.mysql.MysqlopV1alpha1().MySQLDatabases(cached.Namespace).UpdateStatus)
}
