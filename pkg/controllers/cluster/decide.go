package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// The functions in this file decide; they do no I/O and never modify their arguments.

// versionDecision is what to do with spec.version given what the StatefulSet already runs.
type versionDecision struct {
	// Version is the server version to build the pod template with.
	Version string
	// Refused is set when spec.version is a downgrade; Version is then the deployed one.
	Refused bool
}

// decideVersion compares the desired version with the one the StatefulSet's template carries
// (empty when there is no StatefulSet yet). Both are valid semantic versions by then: desired
// passed validation, deployed was written by us from a validated spec.
func decideVersion(desired, deployed string) versionDecision {
	if deployed == "" || deployed == desired {
		return versionDecision{Version: desired}
	}
	down, err := v1alpha1.IsDowngrade(deployed, desired)
	if err != nil || !down {
		// An unparsable deployed version cannot have come from us; moving off it is safe.
		return versionDecision{Version: desired}
	}
	return versionDecision{Version: deployed, Refused: true}
}

// deployedVersion is the server version the StatefulSet's pod template asks for.
func deployedVersion(sts *appsv1.StatefulSet) string {
	if sts == nil {
		return ""
	}
	return sts.Spec.Template.Annotations[v1alpha1.AnnotationVersion]
}

// podPlan is the work a reconcile does on existing pods.
type podPlan struct {
	// Patch are pods to bring to the template's agent image, labels and annotations in place.
	Patch []*corev1.Pod
	// Restart is the one pod to delete so that it comes back on the new template, if any.
	Restart *corev1.Pod
	// Outdated counts member pods whose restart hash differs from the template's.
	Outdated int
}

// planPods decides which pods to patch in place and which single pod to restart. A restart
// happens only when the StatefulSet controller has observed the template (templateObserved),
// every member exists, none is terminating and all are ready, so at most one member is down
// because of us; replicas go first (highest ordinal first) and the primary last.
func planPods(tpl *corev1.PodTemplateSpec, agentImage string, pods []*corev1.Pod, setName string, members int32, templateObserved bool) podPlan {
	var plan podPlan
	want := tpl.Annotations[v1alpha1.AnnotationRestartHash]
	allReady := true
	present := 0
	var outdated []*corev1.Pod
	for _, p := range memberPods(pods, setName, members) {
		present++
		if p.DeletionTimestamp != nil || !podReady(p) {
			allReady = false
		}
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Annotations[v1alpha1.AnnotationRestartHash] != want {
			outdated = append(outdated, p)
			continue
		}
		if needsPatch(tpl, agentImage, p) {
			plan.Patch = append(plan.Patch, p)
		}
	}
	plan.Outdated = len(outdated)
	if len(outdated) == 0 || !templateObserved || !allReady || present < int(members) || len(plan.Patch) > 0 {
		return plan
	}
	slices.SortFunc(outdated, func(a, b *corev1.Pod) int {
		pa, pb := isPrimary(a), isPrimary(b)
		if pa != pb {
			if pa {
				return 1
			}
			return -1
		}
		return resources.Ordinal(setName, b.Name) - resources.Ordinal(setName, a.Name)
	})
	plan.Restart = outdated[0]
	return plan
}

// needsPatch reports whether p lacks the template's labels, annotations or agent image.
func needsPatch(tpl *corev1.PodTemplateSpec, agentImage string, p *corev1.Pod) bool {
	for k, v := range tpl.Labels {
		if p.Labels[k] != v {
			return true
		}
	}
	for k, v := range tpl.Annotations {
		if p.Annotations[k] != v {
			return true
		}
	}
	for _, c := range p.Spec.Containers {
		if c.Name == resources.ContainerAgent && c.Image != agentImage {
			return true
		}
	}
	return false
}

// memberPods returns the pods of set whose ordinal is below members, ordered by ordinal.
func memberPods(pods []*corev1.Pod, setName string, members int32) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if o := resources.Ordinal(setName, p.Name); o >= 0 && o < int(members) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		return resources.Ordinal(setName, a.Name) - resources.Ordinal(setName, b.Name)
	})
	return out
}

func isPrimary(p *corev1.Pod) bool { return p.Labels[v1alpha1.LabelRole] == v1alpha1.RolePrimary }

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// clusteringView is the clustering manager's latest word on a cluster, nil without one.
type clusteringView struct {
	Decision *clustering.Decision
	Observed []clustering.Instance
}

// roleOf is the role label member i should carry under d: the primary label only on a ready
// primary and the replica label only on ready replicas, so the Services never send traffic to
// a member that does not play its role.
func roleOf(d *clustering.Decision, i int) string {
	if i < 0 || i >= len(d.Ready) || !d.Ready[i] {
		return ""
	}
	if i == d.Primary {
		return v1alpha1.RolePrimary
	}
	return v1alpha1.RoleReplica
}

// planRoles returns the member pods whose role label must change, with the new value ("" removes it).
func planRoles(pods []*corev1.Pod, setName string, members int32, d *clustering.Decision) map[string]string {
	out := map[string]string{}
	for _, p := range memberPods(pods, setName, members) {
		if p.DeletionTimestamp != nil {
			continue
		}
		if role := roleOf(d, resources.Ordinal(setName, p.Name)); p.Labels[v1alpha1.LabelRole] != role {
			out[p.Name] = role
		}
	}
	return out
}

// effectiveMembers is the member count to run now: the desired one, except that a scale-down
// never removes the primary: while the primary's ordinal is at or above the desired count, the
// cluster keeps enough members to hold it (and switchoverTarget moves it below).
func effectiveMembers(desired int32, d *clustering.Decision) int32 {
	if d != nil && d.Primary >= int(desired) {
		return int32(d.Primary + 1)
	}
	return desired
}

// switchoverTarget is the member to switch over to, or -1: the one the cluster's annotation
// names; or, when a scale-down would remove the primary, a ready member below the desired
// count; or, when the rollout would restart the primary, a ready replica. holdRestart then says
// the restart waits until the primary moved.
func switchoverTarget(requested, setName string, desired int32, plan podPlan, d *clustering.Decision) (target int, holdRestart bool) {
	if requested != "" {
		return resources.Ordinal(setName, requested), plan.Restart != nil && isPrimary(plan.Restart)
	}
	if d != nil && d.Primary >= int(desired) {
		for i, ready := range d.Ready {
			if ready && i < int(desired) {
				return i, plan.Restart != nil && isPrimary(plan.Restart)
			}
		}
		return -1, plan.Restart != nil && isPrimary(plan.Restart)
	}
	if plan.Restart == nil || !isPrimary(plan.Restart) || d == nil {
		return -1, false
	}
	for i, ready := range d.Ready {
		if ready && i != d.Primary {
			return i, true
		}
	}
	return -1, true
}

// switchoverReason says why switchoverTarget moves the primary, for the metric of primary
// changes: a request (the annotation), a scale-in below the primary's ordinal, or a restart
// of the primary's pod.
func switchoverReason(requested string, desired int32, d *clustering.Decision) string {
	switch {
	case requested != "":
		return "requested"
	case d != nil && d.Primary >= int(desired):
		return "scale_in"
	}
	return "restart"
}

// observed is everything computeStatus reads.
type observed struct {
	Cluster *v1alpha1.MySQLCluster // defaulted copy, spec.version already decided
	Pods    []*corev1.Pod
	Plan    podPlan
	// Conflicts names children that exist but are not controlled by the cluster.
	Conflicts []string
	// ChildError is why creating or updating a child failed this round ("" when none did).
	ChildError string
	// MissingSecret says what of the user's root password Secret is missing ("" when nothing).
	MissingSecret string
	// Refused is set when a version downgrade was refused; RequestedVersion is then what the
	// spec asked for (Cluster.Spec.Version holds the kept one).
	Refused          bool
	RequestedVersion string
	OperatorVersion  string
	// Clustering is nil when no clustering manager runs for the cluster.
	Clustering *clusteringView
	// Fence says who stopped the cluster's writes, "" when nobody did. The phase is Fenced once
	// the clustering decision was made under it.
	Fence string
	// Archive is the cluster's binary log archiving as last seen (nil when none is).
	Archive *archiveView
	// Backups are the cluster's Complete backups.
	Backups []*v1alpha1.MySQLBackup
	// TLS is the state of the cluster's certificates (zero while TLS is off).
	TLS tlsView
}

// computeStatus returns the cluster's new status from what was observed. Conditions keep their
// transition times when their status does not change.
func computeStatus(prev v1alpha1.MySQLClusterStatus, o observed) v1alpha1.MySQLClusterStatus {
	c := o.Cluster
	st := *prev.DeepCopy()
	st.ObservedGeneration = c.Generation
	st.Selector = resources.Selector(c)
	st.OperatorVersion = o.OperatorVersion

	setName := resources.StatefulSetName(c)
	members := memberPods(o.Pods, setName, c.Spec.Members)
	st.ReadyMembers = 0
	st.Primary = ""
	st.Instances = nil
	versions := map[string]bool{}
	var dec *clustering.Decision
	if o.Clustering != nil {
		dec = o.Clustering.Decision
	}
	for _, p := range members {
		ord := resources.Ordinal(setName, p.Name)
		ready := podReady(p)
		in := v1alpha1.InstanceStatus{Name: p.Name, Role: p.Labels[v1alpha1.LabelRole], Version: p.Annotations[v1alpha1.AnnotationVersion],
			TLS: servesTLS(p)}
		if dec != nil {
			in.Role = roleOf(dec, ord)
			ready = ready && in.Role != ""
			if ord < len(o.Clustering.Observed) {
				if ms := o.Clustering.Observed[ord].Status; ms != nil {
					in.GTIDExecuted = ms.Executed.String()
					if ms.Replica != nil {
						in.LagSeconds = ms.Replica.LagSeconds
					}
				}
			}
		}
		in.Ready = ready
		if ready {
			st.ReadyMembers++
		}
		if in.Role == v1alpha1.RolePrimary && dec == nil {
			st.Primary = p.Name
		}
		versions[in.Version] = true
		st.Instances = append(st.Instances, in)
	}
	// The recorded primary stays recorded while it is down and until a failover names
	// another: a restarted operator resumes from it, and must not take a cluster whose primary
	// is briefly unreachable for one without a primary.
	if dec != nil {
		st.Epoch, st.Replaced = dec.Epoch, nil
		for _, i := range dec.Replaced {
			st.Replaced = append(st.Replaced, fmt.Sprintf("%s-%d", setName, i))
		}
	}
	switch {
	case dec != nil && dec.Primary >= 0:
		st.Primary = fmt.Sprintf("%s-%d", setName, dec.Primary)
	case dec != nil || st.Primary == "":
		st.Primary = prev.Primary
	}
	if len(members) == int(c.Spec.Members) && len(versions) == 1 && !versions[""] {
		for v := range versions {
			st.CurrentVersion = v
		}
	}

	gen := c.Generation
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen,
		})
	}
	if o.Refused {
		set(v1alpha1.ConditionAccepted, metav1.ConditionFalse, v1alpha1.ReasonDowngradeRefused, downgradeMessage(o.RequestedVersion, c.Spec.Version))
	} else {
		set(v1alpha1.ConditionAccepted, metav1.ConditionTrue, v1alpha1.ReasonAccepted, "The spec was accepted.")
	}
	if len(o.Conflicts) > 0 {
		set(v1alpha1.ConditionSynced, metav1.ConditionFalse, v1alpha1.ReasonErrResourceExists,
			"Not controlled by this MySQLCluster, left unchanged: "+strings.Join(o.Conflicts, ", "))
	} else if o.MissingSecret != "" {
		set(v1alpha1.ConditionSynced, metav1.ConditionFalse, v1alpha1.ReasonSecretNotFound, o.MissingSecret+": the members cannot start until it exists")
	} else if o.ChildError != "" {
		set(v1alpha1.ConditionSynced, metav1.ConditionFalse, v1alpha1.ReasonSyncFailed, "Creating or updating a child failed: "+o.ChildError)
	} else {
		set(v1alpha1.ConditionSynced, metav1.ConditionTrue, v1alpha1.ReasonSynced, "Every child matches the spec.")
	}

	healthy := true
	if dec != nil {
		healthy = dec.State == clustering.Healthy
		h, deg := metav1.ConditionFalse, metav1.ConditionTrue
		if healthy {
			h, deg = metav1.ConditionTrue, metav1.ConditionFalse
		}
		if dec.State == clustering.Bootstrapping || dec.State == clustering.Fenced {
			deg = metav1.ConditionFalse
		}
		set(v1alpha1.ConditionHealthy, h, string(dec.State), dec.Reason)
		set(v1alpha1.ConditionDegraded, deg, string(dec.State), dec.Reason)
	}
	switch {
	case dec != nil && o.Fence != "" && dec.Fence == o.Fence:
		// Stopped on purpose, and clustering carried out a decision under the fence: the
		// primary takes no more writes. The phase says so for the whole restore, the
		// conditions say how.
		st.Phase = v1alpha1.ClusterFenced
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, string(clustering.Fenced), dec.Reason)
	case dec != nil && o.Plan.Outdated == 0 && dec.State != clustering.Healthy && dec.State != clustering.Degraded:
		// Bootstrapping, FailingOver, Lost: the clustering state is the phase.
		st.Phase = v1alpha1.ClusterPhase(dec.State)
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, string(dec.State), dec.Reason)
	case st.ReadyMembers == c.Spec.Members && o.Plan.Outdated == 0 && healthy:
		st.Phase = v1alpha1.ClusterHealthy
		set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonMembersReady, "Every member is ready and up to date.")
	case o.Plan.Outdated > 0:
		st.Phase = v1alpha1.ClusterUpgrading
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonRollingRestart,
			plural(o.Plan.Outdated, "member waits", "members wait")+" to restart onto the new pod template.")
	case st.ReadyMembers == c.Spec.Members:
		st.Phase = v1alpha1.ClusterDegraded
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, string(dec.State), dec.Reason)
	case st.ReadyMembers == 0:
		st.Phase = v1alpha1.ClusterPending
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonMembersNotReady, "No member is ready yet.")
	default:
		st.Phase = v1alpha1.ClusterDegraded
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonMembersNotReady,
			plural(int(st.ReadyMembers), "member is", "members are")+" ready of "+strconv.Itoa(int(c.Spec.Members))+".")
	}
	archive, cond := archiveStatus(c.Spec.BinlogArchive, o.Archive)
	st.BinlogArchive = archive
	st.RecoverableFrom, st.RecoverableUntil = recoverableWindow(c, o.Backups, o.Archive)
	if cond != nil {
		set(cond.Type, cond.Status, cond.Reason, cond.Message)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionArchiving)
	}
	st.TLS = o.TLS.status
	if cond := tlsCondition(o.TLS, gen); cond != nil {
		set(cond.Type, cond.Status, cond.Reason, cond.Message)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionCertificatesReady)
	}
	return st
}

// servesTLS reports whether pod's server serves TLS: it was started from a template with TLS
// on (pods are only patched in place to a template that needs no restart, so the annotation
// never runs ahead of the server).
func servesTLS(pod *corev1.Pod) bool {
	return pod != nil && pod.Annotations[v1alpha1.AnnotationTLS] == "true"
}

// invalidStatus is the status of a cluster whose spec failed validation: only the Accepted
// condition and the phase change, so the rest still describes what runs.
func invalidStatus(prev v1alpha1.MySQLClusterStatus, c *v1alpha1.MySQLCluster, msg string) v1alpha1.MySQLClusterStatus {
	st := *prev.DeepCopy()
	st.ObservedGeneration = c.Generation
	st.Phase = v1alpha1.ClusterInvalid
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionAccepted, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalidSpec,
		Message: msg, ObservedGeneration: c.Generation,
	})
	return st
}

// downgradeMessage explains a refused downgrade.
func downgradeMessage(requested, kept string) string {
	return "spec.version " + requested + " is older than the running version " + kept +
		"; downgrades are not supported, the cluster stays on " + kept + "."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// statusCoalesce is the least time between two status writes of a cluster while its members
// come up (or come back): each member's progress is a write otherwise, and a burst of new
// clusters would spend its requests on them.
const statusCoalesce = 2 * time.Second

// statusHold is how long to hold back the status next, given the written prev and the time
// since this controller last wrote the cluster's status; 0 writes it now. Only member progress
// between Pending and Degraded waits: a cluster turning Healthy, any other phase, a new primary
// or epoch, and every other field are written at once.
func statusHold(prev, next *v1alpha1.MySQLClusterStatus, sinceLast time.Duration) time.Duration {
	progress := func(p v1alpha1.ClusterPhase) bool {
		return p == v1alpha1.ClusterPending || p == v1alpha1.ClusterDegraded
	}
	if sinceLast >= statusCoalesce || !progress(prev.Phase) || !progress(next.Phase) {
		return 0
	}
	a, b := prev.DeepCopy(), next.DeepCopy()
	for _, st := range []*v1alpha1.MySQLClusterStatus{a, b} {
		st.Instances, st.ReadyMembers, st.Phase = nil, 0, ""
		// The conditions that follow the members; the others (Synced, Accepted, ...) count.
		st.Conditions = slices.DeleteFunc(st.Conditions, func(c metav1.Condition) bool {
			return c.Type == v1alpha1.ConditionReady || c.Type == v1alpha1.ConditionHealthy || c.Type == v1alpha1.ConditionDegraded
		})
	}
	if !apiequality.Semantic.DeepEqual(a, b) {
		return 0
	}
	return statusCoalesce - sinceLast
}
