package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/metrics"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/networkpolicy"
	"github.com/mysqlop/mysql-operator/pkg/resources/pdb"
	"github.com/mysqlop/mysql-operator/pkg/resources/secret"
	"github.com/mysqlop/mysql-operator/pkg/resources/service"
	"github.com/mysqlop/mysql-operator/pkg/resources/statefulset"
	"github.com/mysqlop/mysql-operator/pkg/version"
)

// Sync reconciles one MySQLCluster. A nil return means "done until something changes"; an
// error means "retry with backoff" and is only returned for transient failures.
func (c *Controller) Sync(ctx context.Context, key cache.ObjectName) (ctrl.Result, error) {
	res, err := c.sync(ctx, key)
	// A conflict is optimistic concurrency doing its job (the retry reads the newer object),
	// not a failure anyone should be alerted to.
	if err != nil && !apierrors.IsConflict(err) {
		metrics.ClusterReconcileFailed(key.Namespace, key.Name)
	}
	return res, err
}

func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (ctrl.Result, error) {
	logger := klog.FromContext(ctx)
	cached, err := c.clusters.MySQLClusters(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("Cluster no longer exists")
		c.statusWrites.Delete(key)
		c.heldChanges.Delete(key)
		c.clusterings.stop(key)
		metrics.ForgetCluster(key.Namespace, key.Name)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get cluster %s: %w", key, err)
	}
	if c.written.Behind(cached) {
		// The cache has not shown this controller's last write of the cluster yet: acting on
		// the older copy would only end in a conflict. The write's own event brings the
		// cluster back; the requeue is for an event that never comes.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if cached.DeletionTimestamp != nil {
		// Children carry owner references; the garbage collector removes them.
		c.clusterings.stop(key)
		metrics.ForgetCluster(key.Namespace, key.Name)
		return ctrl.Result{}, nil
	}

	cluster := cached.DeepCopy()
	v1alpha1.SetClusterDefaults(cluster)
	if errs := v1alpha1.ValidateCluster(cluster); len(errs) > 0 {
		msg := errs.ToAggregate().Error()
		st := invalidStatus(cached.Status, cluster, msg)
		if conditionChanged(cached.Status.Conditions, st.Conditions, v1alpha1.ConditionAccepted) {
			events.InvalidSpec.Record(c.recorder, cached, msg)
		}
		metrics.ObserveCluster(cluster.Namespace, cluster.Name, cluster.Spec.Members, &st)
		// No retry: the next edit of the spec brings the cluster back to the queue.
		return ctrl.Result{}, c.writeStatus(ctx, cached, st)
	}

	latest, err := c.dropVersionLabel(ctx, cached)
	if err != nil {
		return ctrl.Result{}, err
	}

	var deployed string
	if sts, err := c.statefulSets.StatefulSets(cluster.Namespace).Get(resources.StatefulSetName(cluster)); err == nil && metav1.IsControlledBy(sts, cluster) {
		deployed = deployedVersion(sts)
	}
	requested := cluster.Spec.Version
	vd := decideVersion(requested, deployed)
	cluster.Spec.Version = vd.Version
	desiredMembers := cluster.Spec.Members
	// The clustering runner's last decision, if one runs: it can hold a scale-down.
	var prev *clustering.Decision
	if c.cfg.Clustering {
		prev = c.clusterings.latest(key)
	}
	cluster.Spec.Members = effectiveMembers(desiredMembers, prev)

	children, syncErr := c.syncChildren(ctx, cluster)
	childError := refusedChildren(syncErr)
	desiredSTS := children.statefulSet
	if desiredSTS == nil {
		return ctrl.Result{}, syncErr
	}
	if children.deferred {
		// The StatefulSet's own event brings the cluster back; the requeue is a safety net.
		return ctrl.Result{RequeueAfter: time.Second}, syncErr
	}

	pods, err := c.clusterPods(cluster)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("list pods: %w", err)
	}
	plan := planPods(&desiredSTS.Spec.Template, c.cfg.Images.Agent, pods, resources.StatefulSetName(cluster),
		cluster.Spec.Members, templateObserved(children.current, desiredSTS))
	f, err := c.fence(ctx, latest)
	syncErr = errors.Join(syncErr, err)
	if f.Reason != "" {
		// A restore owns the members until it ends: no rolling restart meanwhile.
		plan.Restart = nil
	}
	var view *clusteringView
	if c.cfg.Clustering && !children.blocked {
		var err error
		view, plan, err = c.syncClustering(ctx, key, latest, cluster, desiredMembers, prev, pods, plan, f, children.tls.caPEM)
		syncErr = errors.Join(syncErr, err)
	}
	if !children.blocked {
		syncErr = errors.Join(syncErr, c.applyPlan(ctx, cluster, &desiredSTS.Spec.Template, plan))
	}

	missing, err := c.missingRootSecret(ctx, cluster)
	syncErr = errors.Join(syncErr, err)
	st := computeStatus(latest.Status, observed{
		Cluster: cluster, Pods: pods, Plan: plan, Conflicts: children.conflicts, ChildError: childError, MissingSecret: missing,
		Refused: vd.Refused, RequestedVersion: requested, OperatorVersion: c.cfg.OperatorVersion,
		Clustering: view, Fence: f.Reason, Archive: c.archiveView(key), Backups: c.completeBackups(cluster),
		TLS: children.tls,
	})
	metrics.ObserveCluster(cluster.Namespace, cluster.Name, desiredMembers, &st)
	if hold := statusHold(&latest.Status, &st, c.sinceStatusWrite(key)); hold > 0 {
		return ctrl.Result{RequeueAfter: hold}, syncErr
	}
	c.eventTransitions(latest, st)
	if err := c.writeStatus(ctx, latest, st); err != nil {
		return ctrl.Result{}, errors.Join(syncErr, err)
	}
	// A renewal is due, or a source that is not watched may have appeared.
	return ctrl.Result{RequeueAfter: children.tls.recheck}, syncErr
}

// refusedChildren returns the text of the errors in err that a retry cannot fix: the API server
// refused a child as invalid or forbidden (a name too long, say). Conflicts, timeouts and
// other transient errors are left out: they are retried, and the condition must not flap.
func refusedChildren(err error) string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if apierrors.IsInvalid(e) || apierrors.IsForbidden(e) || apierrors.IsBadRequest(e) {
			out = append(out, e.Error())
		}
	}
	if err != nil {
		walk(err)
	}
	return strings.Join(out, "; ")
}

// missingRootSecret says what of the Secret spec.rootPasswordSecretRef names is missing ("" when
// none is named or it holds its key). It reads through the client: the operator's cache holds
// only its own Secrets.
func (c *Controller) missingRootSecret(ctx context.Context, cluster *v1alpha1.MySQLCluster) (string, error) {
	ref := cluster.Spec.RootPasswordSecretRef
	if ref == nil {
		return "", nil
	}
	key := ref.Key
	if key == "" {
		key = v1alpha1.DefaultSecretKey
	}
	s, err := c.kube.CoreV1().Secrets(cluster.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("Secret %s (spec.rootPasswordSecretRef) does not exist", ref.Name), nil
	case err != nil:
		return "", fmt.Errorf("get root password secret %s: %w", ref.Name, err)
	case len(s.Data[key]) == 0:
		return fmt.Sprintf("Secret %s (spec.rootPasswordSecretRef) has no key %s", ref.Name, key), nil
	}
	return "", nil
}

// childrenResult is what syncChildren did.
type childrenResult struct {
	// statefulSet is the desired StatefulSet, for planning pod work.
	statefulSet *appsv1.StatefulSet
	// current is the StatefulSet as the API server last returned it (nil if ensure failed).
	current *appsv1.StatefulSet
	// conflicts names the children left alone because someone else controls them.
	conflicts []string
	// blocked is set when the StatefulSet or a Secret the pods mount is one of them: the pods
	// are not ours, or would run with credentials the operator did not choose. Nothing acts
	// on the members then.
	blocked bool
	// tls is the state of the certificates.
	tls tlsView
	// deferred is set when the StatefulSet was created and the children pods do not need
	// (Services, PodDisruptionBudget, NetworkPolicy, CA bundle) were left for the next sync.
	deferred bool
}

// syncChildren brings every child to the desired state and returns the joined transient errors.
// The children it created or updated are named in one event of each.
func (c *Controller) syncChildren(ctx context.Context, cluster *v1alpha1.MySQLCluster) (childrenResult, error) {
	ctx, changes := withChangeLog(ctx)
	var res childrenResult
	defer func() {
		if res.deferred {
			changes.hold(c, cluster)
		} else {
			changes.flush(c, cluster)
		}
	}()
	opVersion := version.LabelValue(c.cfg.OperatorVersion)
	var errs []error
	record := func(err error) {
		var ce *conflictError
		switch {
		case err == nil:
		case errors.As(err, &ce):
			res.conflicts = append(res.conflicts, ce.kind+" "+ce.name)
			// Every Secret here is mounted by the pods or trusted by clients.
			res.blocked = res.blocked || ce.kind == "StatefulSet" || ce.kind == "Secret"
		default:
			errs = append(errs, err)
		}
	}

	// Only the cluster's own Secret's values are kept: a foreign one's are not ours to use.
	var existingData map[string][]byte
	if s, err := secret.Get(c.secrets, cluster); err == nil {
		existingData = s.Data
	}
	sec, err := secret.New(cluster, existingData, opVersion, c.rand)
	if err != nil {
		return res, fmt.Errorf("build credentials secret: %w", err)
	}
	_, _, err = ensure(ctx, c, cluster, c.secretOps(cluster), sec)
	record(err)

	// Before the StatefulSet: the pods mount the servers' certificate.
	res.tls, err = c.syncTLS(ctx, cluster, opVersion)
	record(err)

	cm := configmap.New(cluster, opVersion, holdsData(c.configMaps, cluster))
	setSpecHash(cm, cm.Data)
	_, _, err = ensure(ctx, c, cluster, c.configMapOps(), cm)
	record(err)

	sts := statefulset.New(cluster, statefulset.Params{
		ServerImage:     c.serverImage(cluster),
		AgentImage:      c.cfg.Images.Agent,
		OperatorVersion: opVersion,
		ConfigHash:      configmap.Hash(cm),
	})
	setSpecHash(sts, sts.Spec)
	res.statefulSet = sts
	// The StatefulSet comes as soon as what its pods mount exists, so that pods are scheduled,
	// their claims bound and their servers started while the rest is created.
	if !res.blocked {
		// (Blocked: the credentials Secret is someone else's and pods would mount it. The
		// cluster stops as for a foreign StatefulSet, and a StatefulSet already there is left
		// as it is.)
		var created bool
		res.current, created, err = ensure(ctx, c, cluster, c.statefulSetOps(), sts)
		record(err)
		if created {
			// A new StatefulSet: its pods start now, and the rest waits for this cluster's next
			// turn, behind the other clusters in the queue, so that a burst of new clusters
			// gets every StatefulSet first.
			res.deferred = true
			return res, errors.Join(errs...)
		}
	}

	for _, svc := range []*corev1.Service{
		service.NewHeadless(cluster, opVersion), service.NewPrimary(cluster, opVersion), service.NewReplicas(cluster, opVersion),
	} {
		setSpecHash(svc, svc.Spec)
		_, _, err = ensure(ctx, c, cluster, c.serviceOps(), svc)
		record(err)
	}

	budget := pdb.New(cluster, opVersion)
	setSpecHash(budget, budget.Spec)
	_, _, err = ensure(ctx, c, cluster, c.pdbOps(), budget)
	record(err)

	if op := c.cfg.NetworkPolicy; op != nil {
		np := networkpolicy.New(cluster, opVersion, *op)
		setSpecHash(np, np.Spec)
		_, _, err = ensure(ctx, c, cluster, c.networkPolicyOps(), np)
		record(err)
	}

	record(c.syncCABundle(ctx, cluster, res.tls, opVersion))
	return res, errors.Join(errs...)
}

// holdsData reports whether cluster holds data, which its ConfigMap tells new members' init:
// once it has had a primary (or a change of primary), and from then on for good, as recorded in
// the ConfigMap it controls (status.primary is empty while no member is writable).
func holdsData(configMaps corelisters.ConfigMapLister, cluster *v1alpha1.MySQLCluster) bool {
	if cluster.Status.Primary != "" || cluster.Status.Epoch > 0 {
		return true
	}
	cm, err := configMaps.ConfigMaps(cluster.Namespace).Get(resources.ConfigMapName(cluster))
	return err == nil && metav1.IsControlledBy(cm, cluster) && configmap.HoldsData(cm)
}

// syncClustering hands the cluster's current shape (and fence) to its clustering runner,
// moves role labels to the runner's latest decision, asks for a switchover when one is requested, when a
// scale-down would remove the primary, or when the rollout would restart the primary (holding
// that restart until the primary moved), and clears a switchover request once it is done.
//
// Members whose pods serve TLS (and only while the CA bundle caPEM is known) are connected to,
// and replicate between each other, over TLS that verifies their certificate.
func (c *Controller) syncClustering(ctx context.Context, key cache.ObjectName, latest, cluster *v1alpha1.MySQLCluster, desiredMembers int32, prev *clustering.Decision, pods []*corev1.Pod, plan podPlan, f fence, caPEM []byte) (*clusteringView, podPlan, error) {
	sec, err := secret.Get(c.secrets, cluster)
	if err != nil {
		return nil, plan, nil // created in this round; the next one starts clustering
	}
	setName := resources.StatefulSetName(cluster)
	cfg := runnerConfig{
		flavor: mysql.Flavor(cluster.Spec.Flavor),
		// Semi-sync needs a replica to acknowledge: a single member would never commit.
		semiSync:     cluster.Spec.Replication.Mode == v1alpha1.ReplicationSemiSync && cluster.Spec.Members > 1,
		operatorPass: string(sec.Data[resources.SecretKeyOperatorPassword]),
		replPass:     string(sec.Data[resources.SecretKeyReplicationPassword]),
		primary:      resources.Ordinal(setName, latest.Status.Primary),
		fence:        f.Reason,
		clearErrant:  f.ClearErrant,
		epoch:        latest.Status.Epoch,
		reseed:       reseedPolicy(cluster.Spec.Replication.Reseed),
	}
	for _, r := range latest.Status.Replaced {
		if i := resources.Ordinal(setName, r); i >= 0 {
			cfg.replaced = append(cfg.replaced, i)
		}
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	for i := range int(cluster.Spec.Members) {
		pod := fmt.Sprintf("%s-%d", setName, i)
		host, port := c.cfg.Resolve(cluster, pod)
		tlsOn := caPEM != nil && servesTLS(byName[pod])
		name := ""
		if tlsOn {
			cfg.caPEM = caPEM
			name, _ = resources.DNSResolver(cluster, pod)
		}
		cfg.pods = append(cfg.pods, pod)
		cfg.endpoints = append(cfg.endpoints, clustering.Endpoint{Host: host, Port: port, TLS: tlsOn})
		cfg.serverNames = append(cfg.serverNames, name)
	}
	requested := latest.Annotations[v1alpha1.AnnotationSwitchoverTo]
	target, hold := switchoverTarget(requested, setName, desiredMembers, plan, prev)
	if hold {
		plan.Restart = nil
	}
	cfg.switchoverTo, cfg.switchoverWhy = target, switchoverReason(requested, desiredMembers, prev)
	var reseedErr error
	cfg.reseedRequested, reseedErr = c.reseedRequest(ctx, latest, setName, desiredMembers)
	d, observedInstances := c.clusterings.ensure(ctx, key, cluster, cfg)
	if d == nil {
		return nil, plan, nil
	}

	errs := []error{c.labelRoles(ctx, cluster, pods, d)}
	if requested != "" && roleOf(d, resources.Ordinal(setName, requested)) == v1alpha1.RolePrimary {
		clear := objects.Metadata{Annotations: map[string]*string{v1alpha1.AnnotationSwitchoverTo: nil}}
		if _, err := c.patchCluster(ctx, cluster, clear); err != nil {
			errs = append(errs, fmt.Errorf("clear switchover request: %w", err))
		}
	}
	return &clusteringView{Decision: d, Observed: observedInstances}, plan, errors.Join(append(errs, reseedErr)...)
}

// labelRoles moves the role labels of cluster's member pods to decision d. The clustering runner
// calls it too, as soon as a decision changes: the primary Service must follow a failover at
// once, not after the cluster's turn in a queue that a burst of new clusters can make long.
func (c *Controller) labelRoles(ctx context.Context, cluster *v1alpha1.MySQLCluster, pods []*corev1.Pod, d *clustering.Decision) error {
	var errs []error
	for name, role := range planRoles(pods, resources.StatefulSetName(cluster), cluster.Spec.Members, d) {
		label := objects.Metadata{Labels: map[string]*string{v1alpha1.LabelRole: nil}} // "" removes the label
		if role != "" {
			label.Labels[v1alpha1.LabelRole] = objects.Value(role)
		}
		if _, err := objects.PatchMetadata(ctx, c.kube.CoreV1().Pods(cluster.Namespace).Patch, name, label); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("label pod %s as %q: %w", name, role, err))
		}
	}
	return errors.Join(errs...)
}

// reseedRequest holds the ordinal of the member the annotation mysqlop.io/reseed asks to
// re-seed, if any. A request for no member or for the primary is refused: removed, with an
// event, so that it cannot wait for ever (the clustering manager would never carry it out).
func (c *Controller) reseedRequest(ctx context.Context, cluster *v1alpha1.MySQLCluster, setName string, members int32) ([]int, error) {
	member, ok := cluster.Annotations[v1alpha1.AnnotationReseed]
	if !ok {
		return nil, nil
	}
	i := resources.Ordinal(setName, member)
	if i >= 0 && i < int(members) && member != cluster.Status.Primary {
		return []int{i}, nil
	}
	events.ReseedRefused.Record(c.recorder, cluster, member)
	clear := objects.Metadata{Annotations: map[string]*string{v1alpha1.AnnotationReseed: nil}}
	if _, err := c.patchCluster(ctx, cluster, clear); err != nil {
		return nil, fmt.Errorf("remove the refused re-seed request: %w", err)
	}
	return nil, nil
}

// templateObserved reports whether the StatefulSet controller has seen the desired template:
// a pod deleted before then could be recreated from the old one and need a second restart.
func templateObserved(current, desired *appsv1.StatefulSet) bool {
	return current != nil && current.Status.ObservedGeneration >= current.Generation &&
		current.Annotations[v1alpha1.AnnotationSpecHash] == desired.Annotations[v1alpha1.AnnotationSpecHash]
}

// serverImage is the server image of cluster: its repository override or the flavor default,
// tagged with the version.
func (c *Controller) serverImage(cluster *v1alpha1.MySQLCluster) string {
	repo := cluster.Spec.Image
	if repo == "" {
		repo = c.cfg.Images.MySQL
		if cluster.Spec.Flavor == v1alpha1.FlavorMariaDB {
			repo = c.cfg.Images.MariaDB
		}
	}
	return repo + ":" + cluster.Spec.Version
}

// applyPlan patches pods in place and restarts at most one.
func (c *Controller) applyPlan(ctx context.Context, cluster *v1alpha1.MySQLCluster, tpl *corev1.PodTemplateSpec, plan podPlan) error {
	logger := klog.FromContext(ctx)
	var errs []error
	for _, p := range plan.Patch {
		patch, imageChanged, err := podPatch(tpl, c.cfg.Images.Agent, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := c.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("patch pod %s: %w", p.Name, err))
			continue
		}
		logger.V(2).Info("Patched pod in place", "pod", klog.KObj(p), "agentImageChanged", imageChanged)
		if imageChanged {
			events.AgentUpdated.Record(c.recorder, cluster, p.Name, c.cfg.Images.Agent)
		}
	}
	if p := plan.Restart; p != nil {
		// The UID precondition makes sure we delete the pod we judged, not its successor.
		uid := p.UID
		err := c.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete pod %s for restart: %w", p.Name, err))
		} else {
			logger.Info("Restarting member onto the new pod template", "pod", klog.KObj(p))
			events.MemberRestarted.Record(c.recorder, cluster, p.Name)
		}
	}
	return errors.Join(errs...)
}

// podPatch is the strategic merge patch that gives p the template's labels and annotations and
// the agent image. Only a container image may change on a running pod, and changing it makes
// the kubelet restart that container alone.
func podPatch(tpl *corev1.PodTemplateSpec, agentImage string, p *corev1.Pod) ([]byte, bool, error) {
	imageChanged := false
	for _, ctr := range p.Spec.Containers {
		if ctr.Name == resources.ContainerAgent && ctr.Image != agentImage {
			imageChanged = true
		}
	}
	patch := map[string]any{
		"metadata": map[string]any{"labels": tpl.Labels, "annotations": tpl.Annotations},
	}
	if imageChanged {
		patch["spec"] = map[string]any{"containers": []map[string]any{{"name": resources.ContainerAgent, "image": agentImage}}}
	}
	b, err := json.Marshal(patch)
	if err != nil {
		return nil, false, fmt.Errorf("encode patch for pod %s: %w", p.Name, err)
	}
	return b, imageChanged, nil
}

// dropVersionLabel removes the operator-version label that operator builds before 2026-12-07
// set on the cluster object itself. The operator build is status.operatorVersion, which the
// status write carries anyway and which is a selectable field (kubectl get --field-selector
// status.operatorVersion=...): the label cost every new cluster a write of its own, and it
// went stale once no build wrote it. Children keep the label; it is set when they are written.
func (c *Controller) dropVersionLabel(ctx context.Context, cached *v1alpha1.MySQLCluster) (*v1alpha1.MySQLCluster, error) {
	if _, ok := cached.Labels[v1alpha1.LabelOperatorVersion]; !ok {
		return cached, nil
	}
	updated, err := c.patchCluster(ctx, cached, objects.Metadata{Labels: map[string]*string{v1alpha1.LabelOperatorVersion: nil}})
	if err != nil {
		return nil, fmt.Errorf("remove the operator-version label of cluster %s: %w", cached.Name, err)
	}
	return updated, nil
}

// writeStatus writes st through the status subresource unless nothing changed.
func (c *Controller) writeStatus(ctx context.Context, cluster *v1alpha1.MySQLCluster, st v1alpha1.MySQLClusterStatus) error {
	if apiequality.Semantic.DeepEqual(cluster.Status, st) {
		return nil
	}
	u := cluster.DeepCopy()
	u.Status = st
	updated, err := c.mysql.MysqlopV1alpha1().MySQLClusters(u.Namespace).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of cluster %s: %w", cluster.Name, err)
	}
	c.written.Wrote(updated)
	c.statusWrites.Store(cache.ObjectName{Namespace: u.Namespace, Name: u.Name}, time.Now())
	return nil
}

// sinceStatusWrite is the time since this process last wrote the status of the cluster key (a
// long time when it never did).
func (c *Controller) sinceStatusWrite(key cache.ObjectName) time.Duration {
	if t, ok := c.statusWrites.Load(key); ok {
		return time.Since(t.(time.Time))
	}
	return time.Duration(math.MaxInt64)
}

// patchCluster patches the labels or annotations of cluster and records the write.
func (c *Controller) patchCluster(ctx context.Context, cluster *v1alpha1.MySQLCluster, m objects.Metadata) (*v1alpha1.MySQLCluster, error) {
	updated, err := objects.PatchMetadata(ctx, c.mysql.MysqlopV1alpha1().MySQLClusters(cluster.Namespace).Patch, cluster.Name, m)
	if err != nil {
		return nil, err
	}
	c.written.Wrote(updated)
	return updated, nil
}

// eventTransitions emits events for condition changes, once per change rather than per sync.
func (c *Controller) eventTransitions(cluster *v1alpha1.MySQLCluster, st v1alpha1.MySQLClusterStatus) {
	old := cluster.Status
	// A condition turning False is a Warning, but for waiting for the first archive report or
	// for cert-manager's first certificate.
	for _, t := range []string{v1alpha1.ConditionAccepted, v1alpha1.ConditionSynced, v1alpha1.ConditionArchiving, v1alpha1.ConditionCertificatesReady} {
		if !conditionChanged(old.Conditions, st.Conditions, t) {
			continue
		}
		if cond := meta.FindStatusCondition(st.Conditions, t); cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason != v1alpha1.ReasonArchivePending && cond.Reason != v1alpha1.ReasonCertificatePending {
			conditionEvent(cond.Reason).Record(c.recorder, cluster, cond.Message)
		}
	}
	if old.CurrentVersion != "" && st.CurrentVersion != old.CurrentVersion {
		events.VersionUpgraded.Record(c.recorder, cluster, st.CurrentVersion, old.CurrentVersion)
	}
}

// conditionChanged reports whether condition t differs in status, reason or message.
func conditionChanged(old, cur []metav1.Condition, t string) bool {
	a, b := meta.FindStatusCondition(old, t), meta.FindStatusCondition(cur, t)
	if a == nil || b == nil {
		return a != b
	}
	return a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message
}

// reseedPolicy maps spec.replication.reseed to the clustering policy.
func reseedPolicy(p v1alpha1.ReseedPolicy) clustering.ReseedPolicy {
	switch p {
	case v1alpha1.ReseedDiverged:
		return clustering.ReseedDiverged
	case v1alpha1.ReseedNever:
		return clustering.ReseedNever
	}
	return clustering.ReseedFailedPrimaries
}

// conditionEvent is the Warning event of a condition turning False with reason.
func conditionEvent(reason string) events.Event {
	switch reason {
	case v1alpha1.ReasonInvalidSpec:
		return events.InvalidSpec
	case v1alpha1.ReasonDowngradeRefused:
		return events.DowngradeRefused
	case v1alpha1.ReasonErrResourceExists:
		return events.ErrResourceExists
	case v1alpha1.ReasonSecretNotFound:
		return events.ClusterSecretNotFound
	case v1alpha1.ReasonArchiveFailed:
		return events.ArchiveFailed
	case v1alpha1.ReasonArchiveGap:
		return events.ArchiveGap
	case v1alpha1.ReasonArchiveLagging:
		return events.ArchiveLagging
	case v1alpha1.ReasonCertificateExpiring:
		return events.CertificateExpiring
	case v1alpha1.ReasonCASecretInvalid:
		return events.CASecretInvalid
	case v1alpha1.ReasonCertManagerMissing:
		return events.CertManagerMissing
	}
	return events.SyncFailed
}

// archiveView is the cluster's archiving as its runner last saw it; nil without clustering.
func (c *Controller) archiveView(key cache.ObjectName) *archiveView {
	if !c.cfg.Clustering {
		return nil
	}
	return c.clusterings.archive(key)
}

// podsByCluster is the index of the pods cache by "<namespace>/<cluster>".
const podsByCluster = "cluster"

// clusterPods returns the pods of cluster from the cache (shared: never modified).
func (c *Controller) clusterPods(cluster *v1alpha1.MySQLCluster) ([]*corev1.Pod, error) {
	pods, err := ctrl.Indexed[*corev1.Pod](c.podIndex, podsByCluster, cluster.Namespace, cluster.Name)
	if err != nil {
		return nil, fmt.Errorf("list the pods of cluster %s: %w", cluster.Name, err)
	}
	return pods, nil
}

// completeBackups are the Complete MySQLBackups of cl (the cache's own: never modified).
func (c *Controller) completeBackups(cl *v1alpha1.MySQLCluster) []*v1alpha1.MySQLBackup {
	if cl.Spec.BinlogArchive == nil {
		return nil // only the recoverable window needs them
	}
	all, _ := ctrl.Indexed[*v1alpha1.MySQLBackup](c.backupIndex, ctrl.BackupsByCluster, cl.Namespace, cl.Name)
	out := all[:0]
	for _, b := range all {
		if b.Status.Phase == v1alpha1.JobComplete {
			out = append(out, b)
		}
	}
	return out
}
