// Package backupschedule is the MySQLBackupSchedule controller: on a cron schedule it creates
// MySQLBackups from the schedule's template, applies the concurrency policy, prunes finished
// backups its retention no longer keeps, and (spec.verify) has each completed backup verified.
//
// Backups carry the label mysqlop.io/backup-schedule and the schedule's own labels (so an
// operator's --target-selector matches them too), but no owner reference: deleting a
// schedule never deletes its backups, or through them their stored data.
package backupschedule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
	listers "github.com/mysqlop/mysql-operator/pkg/generated/listers/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/metrics"
)

// Name is the controller's name in logs, metrics and its workqueue.
const Name = "backupschedule"

const bySchedule = "schedule"

// Controller reconciles MySQLBackupSchedules.
type Controller struct {
	mysql     versioned.Interface
	schedules listers.MySQLBackupScheduleLister
	backups   cache.Indexer
	restores  listers.MySQLRestoreLister
	recorder  record.EventRecorder
	loop      *ctrl.Loop
	now       func() time.Time
}

// New registers the controller's informers with set and returns the controller.
func New(client versioned.Interface, set *informerset.Set, recorder record.EventRecorder) (*Controller, error) {
	schedInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLBackupSchedules().Informer()
	})
	backupInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLBackups().Informer()
	})
	restoreInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLRestores().Informer()
	})
	err := ctrl.AddIndex(backupInf, bySchedule, func(obj any) (string, string) {
		b, ok := obj.(*v1alpha1.MySQLBackup)
		if !ok {
			return "", ""
		}
		return b.Namespace, b.Labels[v1alpha1.LabelSchedule]
	})
	if err != nil {
		return nil, fmt.Errorf("index backups: %w", err)
	}
	c := &Controller{
		mysql:     client,
		schedules: listers.NewMySQLBackupScheduleLister(schedInf.Indexer()),
		backups:   backupInf.Indexer(),
		restores:  listers.NewMySQLRestoreLister(restoreInf.Indexer()),
		recorder:  recorder,
		now:       time.Now,
	}
	c.loop = ctrl.New(Name, "mysqlbackupschedule", c.Sync)
	c.loop.WaitFor(schedInf.HasSynced, backupInf.HasSynced, restoreInf.HasSynced)
	if err := schedInf.AddEventHandler(c.loop.ObjectHandler()); err != nil {
		return nil, fmt.Errorf("watch schedules: %w", err)
	}
	// A backup that finishes, appears or goes can change Active, retention or concurrency.
	onBackup := func(obj any) {
		b, ok := objects.FromEvent[*v1alpha1.MySQLBackup](obj)
		if !ok {
			return
		}
		for _, s := range c.schedulesOf(b) {
			c.loop.Enqueue(s)
		}
	}
	if err := backupInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onBackup, DeleteFunc: onBackup,
		UpdateFunc: func(old, obj any) {
			if old.(*v1alpha1.MySQLBackup).Status.Phase != obj.(*v1alpha1.MySQLBackup).Status.Phase {
				onBackup(obj)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watch backups: %w", err)
	}
	return c, nil
}

// schedulesOf returns the schedule that created b, if it is cached.
func (c *Controller) schedulesOf(b *v1alpha1.MySQLBackup) []*v1alpha1.MySQLBackupSchedule {
	label := b.Labels[v1alpha1.LabelSchedule]
	if label == "" {
		return nil
	}
	all, _ := c.schedules.MySQLBackupSchedules(b.Namespace).List(labels.Everything())
	var out []*v1alpha1.MySQLBackupSchedule
	for _, s := range all {
		if scheduleLabel(s.Name) == label {
			out = append(out, s)
		}
	}
	return out
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error { return c.loop.Run(ctx, workers) }

// scheduleLabel is a schedule's name as a label value (at most 63 characters).
func scheduleLabel(name string) string {
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:46] + "-" + hex.EncodeToString(sum[:8])
}

// parse reads spec's schedule in its time zone. Five cron fields or a descriptor
// (@hourly, @daily, @every 6h, ...).
func parse(spec *v1alpha1.MySQLBackupScheduleSpec) (cron.Schedule, error) {
	expr := spec.Schedule
	if spec.TimeZone != nil && *spec.TimeZone != "" {
		if _, err := time.LoadLocation(*spec.TimeZone); err != nil {
			return nil, fmt.Errorf("time zone %q: %w", *spec.TimeZone, err)
		}
		expr = "CRON_TZ=" + *spec.TimeZone + " " + expr
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec.Schedule, err)
	}
	return s, nil
}

// Sync reconciles the MySQLBackupSchedule key: prunes, creates the backup due, and requeues at the next due time.
func (c *Controller) Sync(ctx context.Context, key cache.ObjectName) (ctrl.Result, error) {
	cached, err := c.schedules.MySQLBackupSchedules(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) || (err == nil && cached.DeletionTimestamp != nil) {
		metrics.ForgetSchedule(key.Namespace, key.Name)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get schedule %s: %w", key, err)
	}
	status := cached.Status.DeepCopy()
	status.ObservedGeneration = cached.Generation
	sched, err := parse(&cached.Spec)
	if err != nil {
		// No retry: the next edit of the spec brings the schedule back.
		if setReady(status, cached.Generation, false, v1alpha1.ReasonInvalidSchedule, err.Error()) {
			events.InvalidSpec.Record(c.recorder, cached, err.Error())
		}
		return ctrl.Result{}, c.writeStatus(ctx, cached, status)
	}
	backups, err := ctrl.Indexed[*v1alpha1.MySQLBackup](c.backups, bySchedule, key.Namespace, scheduleLabel(key.Name))
	if err != nil {
		return ctrl.Result{}, err
	}
	last := cached.CreationTimestamp.Time
	if status.LastScheduleTime != nil {
		last = status.LastScheduleTime.Time
	}
	now := c.now()
	p := decide(now, last, sched, &cached.Spec, backups)
	status.Active, status.LastSuccessfulBackup = p.Active, p.LastSuccessful
	metrics.ObserveSchedule(key.Namespace, key.Name, cached.Spec.BackupTemplate.ClusterRef.Name, lastSuccess(cached, backups), interval(sched, p.Next))

	client := c.mysql.MysqlopV1alpha1().MySQLBackups(key.Namespace)
	for _, name := range p.Prune {
		if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("prune backup %s: %w", name, err)
		}
		events.BackupPruned.Record(c.recorder, cached, name)
	}
	for _, name := range p.Replace {
		if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("replace backup %s: %w", name, err)
		}
	}
	if p.Verify != "" {
		if err := c.verify(ctx, cached, p.Verify, backups); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch {
	case p.Skipped:
		events.BackupSkipped.Record(c.recorder, cached, p.Due.UTC().Format(time.RFC3339), p.Active)
		status.LastScheduleTime = &metav1.Time{Time: p.Due}
	case !p.Due.IsZero():
		name, err := c.create(ctx, cached, p.Due)
		if err != nil {
			return ctrl.Result{}, err
		}
		status.LastScheduleTime = &metav1.Time{Time: p.Due}
		status.Active = append(status.Active, name)
		klog.FromContext(ctx).Info("Created scheduled backup", "schedule", klog.KObj(cached), "backup", name)
	}
	if cached.Spec.Suspend {
		setReady(status, cached.Generation, true, v1alpha1.ReasonSuspended, "Suspended: no new backups are created")
	} else {
		setReady(status, cached.Generation, true, v1alpha1.ReasonScheduled, "Next backup at "+p.Next.UTC().Format(time.RFC3339))
	}
	var res ctrl.Result
	if !p.Next.IsZero() {
		// Just past the due time, so that the next Sync finds the backup due.
		res = ctrl.After(p.Next.Sub(now) + 100*time.Millisecond)
	}
	return res, c.writeStatus(ctx, cached, status)
}

// create makes the backup due at t. Its name is derived from t, so a retry after a crash
// finds the backup it already made instead of making a second one.
func (c *Controller) create(ctx context.Context, s *v1alpha1.MySQLBackupSchedule, t time.Time) (string, error) {
	name := fmt.Sprintf("%s-%d", s.Name, t.Unix())
	lbls := maps.Clone(s.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[v1alpha1.LabelSchedule] = scheduleLabel(s.Name)
	b := &v1alpha1.MySQLBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: lbls},
		Spec:       *s.Spec.BackupTemplate.DeepCopy(),
	}
	_, err := c.mysql.MysqlopV1alpha1().MySQLBackups(s.Namespace).Create(ctx, b, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return name, nil
	}
	if err != nil {
		return "", fmt.Errorf("create backup %s: %w", name, err)
	}
	events.BackupScheduled.Record(c.recorder, s, name, t.UTC().Format(time.RFC3339))
	return name, nil
}

// verify creates the verification restore of backup name unless it exists: named
// <backup>-verify, owned by the backup, labelled as the schedule's backups are.
func (c *Controller) verify(ctx context.Context, s *v1alpha1.MySQLBackupSchedule, name string, backups []*v1alpha1.MySQLBackup) error {
	rname := name + "-verify"
	if _, err := c.restores.MySQLRestores(s.Namespace).Get(rname); err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	i := slices.IndexFunc(backups, func(b *v1alpha1.MySQLBackup) bool { return b.Name == name })
	if i < 0 {
		return nil
	}
	b := backups[i]
	r := &v1alpha1.MySQLRestore{
		ObjectMeta: metav1.ObjectMeta{Name: rname, Namespace: s.Namespace, Labels: maps.Clone(b.Labels),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, v1alpha1.SchemeGroupVersion.WithKind("MySQLBackup"))}},
		Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: b.Spec.ClusterRef, BackupRef: v1alpha1.LocalReference{Name: name}, Verify: true},
	}
	if _, err := c.mysql.MysqlopV1alpha1().MySQLRestores(s.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create verification %s: %w", rname, err)
	}
	klog.FromContext(ctx).Info("Created verification of a scheduled backup", "schedule", klog.KObj(s), "backup", name, "restore", rname)
	return nil
}

func setReady(st *v1alpha1.MySQLBackupScheduleStatus, gen int64, ok bool, reason, msg string) bool {
	return objects.SetReady(&st.Conditions, gen, ok, reason, msg)
}

func (c *Controller) writeStatus(ctx context.Context, cached *v1alpha1.MySQLBackupSchedule, st *v1alpha1.MySQLBackupScheduleStatus) error {
	return objects.WriteStatus(ctx, cached, st, func(s *v1alpha1.MySQLBackupSchedule) *v1alpha1.MySQLBackupScheduleStatus { return &s.Status },
		c.mysql.MysqlopV1alpha1().MySQLBackupSchedules(cached.Namespace).UpdateStatus)
}
