package restore

// Verification restores (spec.verify): a backup and the archive that leads to it are checked
// in two one-member scratch clusters, never in the cluster itself. One is bootstrapped from
// the backup, the other from the cluster's newest earlier backup with the archive replayed to
// the first backup's GTID position; both then hold the data at that position by two
// independent paths, and every table's checksum must agree. The scratch clusters and their
// volumes are deleted when the verification ends (the restore's finalizer holds it until
// they are gone).

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/job"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// maxMismatched bounds status.verification.mismatched.
const maxMismatched = 20

// scratchNames are the scratch clusters of verification restore r: named after it when that
// makes valid cluster names, else after its UID.
func scratchNames(r *v1alpha1.MySQLRestore) (backup, replay string) {
	base := r.Name
	if !v1alpha1.ValidClusterName(base + "-replay") {
		h := fnv.New32a()
		_, _ = h.Write([]byte(r.UID))
		base = fmt.Sprintf("verify-%08x", h.Sum32())
	}
	return base + "-backup", base + "-replay"
}

// scratchCluster is a one-member cluster named name, owned by r, running what src runs (flavor,
// version, image, configuration, volume size, placement), bootstrapped from bootstrap. It
// neither archives nor keeps the source's root password.
func scratchCluster(src *v1alpha1.MySQLCluster, r *v1alpha1.MySQLRestore, name string, bootstrap v1alpha1.BootstrapSpec) *v1alpha1.MySQLCluster {
	s := src.Spec.DeepCopy()
	return &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(r, v1alpha1.SchemeGroupVersion.WithKind("MySQLRestore"))}},
		Spec: v1alpha1.MySQLClusterSpec{
			Members: 1, Flavor: s.Flavor, Version: s.Version, Image: s.Image, ImagePullSecrets: s.ImagePullSecrets,
			Config: s.Config, VolumeClaimTemplate: s.VolumeClaimTemplate, Resources: s.Resources,
			NodeSelector: s.NodeSelector, Affinity: s.Affinity, Tolerations: s.Tolerations, PriorityClassName: s.PriorityClassName,
			PodLabels: s.PodLabels, PodAnnotations: s.PodAnnotations, Bootstrap: &bootstrap,
		},
	}
}

// chooseBase picks the backup a verification of b replays from: the newest other Complete
// backup of the cluster in its current timeline (since) whose position b's contains and
// contains the archive's start (archived from there on: the archive may have begun, or
// retention cut it, after older backups). nil when there is none.
func chooseBase(backups []*v1alpha1.MySQLBackup, b *v1alpha1.MySQLBackup, since time.Time, archiveStart string, flavor mysql.Flavor) *v1alpha1.MySQLBackup {
	others := slices.DeleteFunc(slices.Clone(backups), func(x *v1alpha1.MySQLBackup) bool {
		return x.Name == b.Name || (x.Status.CompletionTime != nil && b.Status.CompletionTime != nil && x.Status.CompletionTime.After(b.Status.CompletionTime.Time)) ||
			!covers(flavor, x.Status.GTIDPosition, archiveStart)
	})
	base, _, _ := chooseBackup(others, b.Spec.ClusterRef.Name, since, archive.Target{GTID: b.Status.GTIDPosition}, flavor)
	return base
}

// covers reports whether GTID set outer contains inner (false when either cannot be parsed).
func covers(f mysql.Flavor, outer, inner string) bool {
	o, err1 := mysql.ParseGTIDSet(f, outer)
	i, err2 := mysql.ParseGTIDSet(f, inner)
	return err1 == nil && err2 == nil && o.Contains(i)
}

// startVerify checks that the verification of spec.backupRef can run and records it as
// Running; the scratch clusters are created by verifying.
func (c *Controller) startVerify(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore) (ctrl.Result, error) {
	bk, err := c.backups.MySQLBackups(key.Namespace).Get(cached.Spec.BackupRef.Name)
	if apierrors.IsNotFound(err) {
		return ctrl.After(waitInterval), c.pending(ctx, cached, fmt.Sprintf("MySQLBackup %s not found", cached.Spec.BackupRef.Name))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case bk.Status.Phase == v1alpha1.JobFailed:
		return ctrl.Result{}, c.finish(ctx, cached, nil, false, fmt.Sprintf("MySQLBackup %s failed: there is nothing to verify", bk.Name))
	case bk.Status.Phase != v1alpha1.JobComplete:
		return ctrl.After(waitInterval), c.pending(ctx, cached, fmt.Sprintf("waiting for MySQLBackup %s to complete", bk.Name))
	case bk.Spec.ClusterRef.Name != cached.Spec.ClusterRef.Name:
		return ctrl.Result{}, c.finish(ctx, cached, nil, false, fmt.Sprintf("MySQLBackup %s is a backup of MySQLCluster %s, not of %s", bk.Name, bk.Spec.ClusterRef.Name, cached.Spec.ClusterRef.Name))
	}
	src, err := c.clusters.MySQLClusters(key.Namespace).Get(cached.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return ctrl.After(waitInterval), c.pending(ctx, cached, fmt.Sprintf("MySQLCluster %s not found: the scratch clusters run what it runs", cached.Spec.ClusterRef.Name))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, err := job.StorageConfig(ctx, c.kube, bk); err != nil {
		return ctrl.After(waitInterval), c.pending(ctx, cached, err.Error())
	}
	ver := &v1alpha1.VerificationStatus{}
	ver.BackupCluster, ver.ReplayCluster = scratchNames(cached)
	msg := fmt.Sprintf("Verifying MySQLBackup %s in scratch cluster %s", bk.Name, ver.BackupCluster)
	if src.Spec.BinlogArchive != nil {
		a, err := c.openArchive(ctx, src)
		var unreachable *errUnreachable
		if errors.As(err, &unreachable) {
			return ctrl.Result{}, c.refuse(ctx, cached, "the archive of MySQLCluster "+src.Name+" cannot be read: "+unreachable.msg)
		}
		if err != nil {
			return ctrl.After(waitInterval), c.pending(ctx, cached, "reading the binary log archive: "+err.Error())
		}
		all, err := c.backups.MySQLBackups(key.Namespace).List(labels.Everything())
		if err != nil {
			return ctrl.Result{}, err
		}
		f, span := mysql.Flavor(src.Spec.Flavor), a.ix.Span()
		if base := chooseBase(all, bk, resources.TimelineStart(src), span.Start, f); base != nil {
			if !covers(f, span.End, bk.Status.GTIDPosition) {
				return ctrl.After(waitInterval), c.pending(ctx, cached, fmt.Sprintf("waiting for the binary log archive of MySQLCluster %s to reach MySQLBackup %s's GTID position %s (archived to %s)",
					src.Name, bk.Name, bk.Status.GTIDPosition, span.End))
			}
			// chooseBase picked base in src's timeline and inside bk's position: checkBase holds.
			_, err := c.planIn(ctx, a, archive.Target{GTID: bk.Status.GTIDPosition}, base)
			if errors.As(err, &unreachable) {
				return ctrl.Result{}, c.refuse(ctx, cached, "the archive does not lead from MySQLBackup "+base.Name+" to "+bk.Name+": "+unreachable.msg)
			}
			if err != nil {
				return ctrl.After(waitInterval), c.pending(ctx, cached, "reading the binary log archive: "+err.Error())
			}
			ver.Base = base.Name
			msg += fmt.Sprintf(", against MySQLBackup %s with the archive replayed to %s in %s", base.Name, bk.Status.GTIDPosition, ver.ReplayCluster)
		}
	}
	if ver.Base == "" {
		ver.ReplayCluster = ""
	}
	status := cached.Status.DeepCopy()
	status.Phase, status.Step, status.Method = v1alpha1.JobRunning, v1alpha1.RestoreVerifying, job.Method(bk)
	status.Backup, status.GTIDPosition, status.Verification = bk.Name, bk.Status.GTIDPosition, ver
	now := metav1.NewTime(c.now())
	status.StartTime = &now
	setComplete(status, cached.Generation, metav1.ConditionUnknown, v1alpha1.ReasonRunning, msg)
	klog.FromContext(ctx).Info("Verification starts", "restore", klog.KObj(cached), "backup", bk.Name, "base", ver.Base)
	// The finalizer first: the scratch clusters' volumes are deleted before the restore goes.
	cached, err = objects.AddFinalizer(ctx, cached, v1alpha1.FinalizerRestore, c.restoreClient(cached).Update)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.After(pollInterval), c.writeStatus(ctx, cached, status)
}

// scratch is one scratch cluster of a verification: its name and what it is filled from.
type scratch struct {
	name      string
	bootstrap v1alpha1.BootstrapSpec
}

// scratches are the scratch clusters of running verification r.
func scratches(r *v1alpha1.MySQLRestore) []scratch {
	v := r.Status.Verification
	if v == nil {
		return nil
	}
	out := []scratch{{v.BackupCluster, v1alpha1.BootstrapSpec{FromBackup: v1alpha1.LocalReference{Name: r.Status.Backup}}}}
	if v.Base != "" {
		out = append(out, scratch{v.ReplayCluster, v1alpha1.BootstrapSpec{FromBackup: v1alpha1.LocalReference{Name: v.Base},
			Target: &v1alpha1.RestoreTarget{GTID: r.Status.GTIDPosition}}})
	}
	return out
}

// checksumID is the agent job ID of r's checksums.
func checksumID(r *v1alpha1.MySQLRestore) string { return string(r.UID) + "-checksum" }

// verifying moves a verification on: creates the scratch clusters, waits for their bootstrap
// restores, has their members checksum every table, and compares.
func (c *Controller) verifying(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore) (ctrl.Result, error) {
	if start := cached.Status.StartTime; start != nil && c.now().Sub(start.Time) > timeout(cached) {
		return ctrl.Result{}, c.finish(ctx, cached, nil, false, fmt.Sprintf("not verified within the timeout of %v", timeout(cached)))
	}
	var waiting []string
	var sums [][]mysql.TableChecksum
	for _, s := range scratches(cached) {
		got, wait, failed, err := c.scratchChecksums(ctx, cached, s)
		switch {
		case err != nil:
			return ctrl.Result{}, err
		case failed != "":
			return ctrl.Result{}, c.finish(ctx, cached, nil, false, failed)
		case wait != "":
			waiting = append(waiting, wait)
		default:
			sums = append(sums, got)
		}
	}
	if len(waiting) > 0 {
		return ctrl.After(pollInterval), c.progress(ctx, cached, nil, "Verifying MySQLBackup "+cached.Status.Backup+": "+strings.Join(waiting, "; "))
	}
	status := cached.Status.DeepCopy()
	ver := status.Verification
	if len(sums) == 1 {
		ver.Tables = len(sums[0])
		return ctrl.Result{}, c.endWith(ctx, cached, nil, status, true, "", fmt.Sprintf("MySQLBackup %s restores and its %s read back (not checked against the archive: MySQLCluster %s has no earlier backup in its archive's current timeline, or archives no binary logs)",
			cached.Status.Backup, tables(ver.Tables), cached.Spec.ClusterRef.Name))
	}
	var differ []string
	ver.Tables, differ = mysql.CompareChecksums(sums[0], sums[1])
	if len(differ) > 0 {
		ver.Mismatched = differ[:min(len(differ), maxMismatched)]
		return ctrl.Result{}, c.endWith(ctx, cached, nil, status, false, v1alpha1.ReasonChecksumMismatch, fmt.Sprintf(
			"%d of %s differ between MySQLBackup %s and MySQLBackup %s with the archive replayed to its position %s: %s",
			len(differ), tables(ver.Tables), cached.Status.Backup, ver.Base, cached.Status.GTIDPosition, strings.Join(ver.Mismatched, ", ")))
	}
	return ctrl.Result{}, c.endWith(ctx, cached, nil, status, true, "", fmt.Sprintf(
		"Verified: the checksums of the %s of MySQLBackup %s match MySQLBackup %s with the archive replayed to %s",
		tables(ver.Tables), cached.Status.Backup, ver.Base, cached.Status.GTIDPosition))
}

// scratchChecksums returns the checksums of scratch cluster s once its bootstrap restore is
// Complete and its member checksummed every table; until then wait says what it waits for.
// failed says why the verification cannot succeed.
func (c *Controller) scratchChecksums(ctx context.Context, r *v1alpha1.MySQLRestore, s scratch) (sums []mysql.TableChecksum, wait, failed string, err error) {
	cl, err := c.clusters.MySQLClusters(r.Namespace).Get(s.name)
	if apierrors.IsNotFound(err) {
		src, err := c.clusters.MySQLClusters(r.Namespace).Get(r.Spec.ClusterRef.Name)
		if err != nil {
			return nil, "", fmt.Sprintf("MySQLCluster %s is gone: the scratch clusters run what it runs (%v)", r.Spec.ClusterRef.Name, err), nil
		}
		_, err = c.mysql.MysqlopV1alpha1().MySQLClusters(r.Namespace).Create(ctx, scratchCluster(src, r, s.name, s.bootstrap), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, "", "", fmt.Errorf("create scratch cluster %s: %w", s.name, err)
		}
		return nil, fmt.Sprintf("creating scratch cluster %s", s.name), "", nil
	}
	if err != nil {
		return nil, "", "", err
	}
	if !metav1.IsControlledBy(cl, r) {
		return nil, "", fmt.Sprintf("a MySQLCluster named %s exists and is not this verification's scratch cluster", s.name), nil
	}
	name := cl.Annotations[v1alpha1.AnnotationBootstrapRestore]
	if name == "" {
		return nil, fmt.Sprintf("%s is %s", s.name, phaseOf(cl)), "", nil
	}
	br, err := c.restores.MySQLRestores(r.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("%s is %s", s.name, phaseOf(cl)), "", nil
	}
	if err != nil {
		return nil, "", "", err
	}
	what := "restoring MySQLBackup " + s.bootstrap.FromBackup.Name
	if s.bootstrap.Target != nil {
		what += " and replaying the archive to " + s.bootstrap.Target.GTID
	}
	cond := meta.FindStatusCondition(br.Status.Conditions, v1alpha1.ConditionComplete)
	switch br.Status.Phase {
	case v1alpha1.JobFailed:
		msg := ""
		if cond != nil {
			msg = ": " + cond.Message
		}
		return nil, "", fmt.Sprintf("%s into scratch cluster %s failed%s", what, s.name, msg), nil
	case v1alpha1.JobComplete:
	default:
		msg := what
		if cond != nil {
			msg = cond.Message
		}
		return nil, fmt.Sprintf("%s: %s", s.name, msg), "", nil
	}
	if cl.Status.Primary == "" {
		return nil, fmt.Sprintf("%s has no primary", s.name), "", nil
	}
	agent, err := c.agentOf(cl, cl.Status.Primary)
	if err != nil {
		return nil, "", "", err
	}
	st, err := agent.Checksum(ctx, checksumID(r))
	if errors.Is(err, agentapi.ErrBackupNotFound) {
		// Not started yet, or the agent restarted: (re)start it.
		st, err = agent.StartChecksum(ctx, agentapi.ChecksumRequest{ID: checksumID(r), TimeoutSeconds: int64(timeout(r).Seconds())})
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("checksums of scratch cluster %s: %w", s.name, err)
	}
	switch st.Phase {
	case agentapi.BackupFailed:
		return nil, "", fmt.Sprintf("checksumming the tables of scratch cluster %s failed: %s", s.name, st.Error), nil
	case agentapi.BackupComplete:
		return st.Checksums, "", "", nil
	}
	return nil, fmt.Sprintf("%s checksums its tables", s.name), "", nil
}

// tables is "1 table" or "n tables".
func tables(n int) string {
	if n == 1 {
		return "1 table"
	}
	return fmt.Sprintf("%d tables", n)
}

// phaseOf is cl's phase for a message.
func phaseOf(cl *v1alpha1.MySQLCluster) string {
	if cl.Status.Phase == "" {
		return "starting"
	}
	return strings.ToLower(string(cl.Status.Phase))
}

// cleanupScratch deletes the scratch clusters of verification r, then their volumes once the
// clusters (and so their pods) are gone; done when nothing is left. The clusters are deleted
// in the foreground, so that no pod of theirs outlives them and holds a volume.
func (c *Controller) cleanupScratch(ctx context.Context, r *v1alpha1.MySQLRestore) (done bool, err error) {
	done = true
	for _, s := range scratches(r) {
		cl, err := c.mysql.MysqlopV1alpha1().MySQLClusters(r.Namespace).Get(ctx, s.name, metav1.GetOptions{})
		switch {
		case err == nil && metav1.IsControlledBy(cl, r):
			done = false
			if cl.DeletionTimestamp == nil {
				fg := metav1.DeletePropagationForeground
				if err := c.mysql.MysqlopV1alpha1().MySQLClusters(r.Namespace).Delete(ctx, s.name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
					return false, fmt.Errorf("delete scratch cluster %s: %w", s.name, err)
				}
			}
			continue
		case err != nil && !apierrors.IsNotFound(err):
			return false, fmt.Errorf("get scratch cluster %s: %w", s.name, err)
		case err == nil:
			continue // another's cluster of that name: never ours to delete
		}
		sel := labels.SelectorFromSet(resources.SelectorLabels(&v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Name: s.name}})).String()
		if err := c.kube.CoreV1().PersistentVolumeClaims(r.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil {
			return false, fmt.Errorf("delete the volumes of scratch cluster %s: %w", s.name, err)
		}
	}
	return done, nil
}
