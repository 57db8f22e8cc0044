package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ownwrites"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/secret"
)

// conflictError reports a child that exists but is controlled by someone else. It is a
// permanent condition as far as retries go: the controller records it and moves on.
type conflictError struct{ kind, name string }

func (e *conflictError) Error() string {
	return fmt.Sprintf("%s %s exists and is not controlled by the MySQLCluster", e.kind, e.name)
}

// typedClient is the part of a client-go typed client (ServiceInterface, ...) that ensure uses.
type typedClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// cachedGetter is the part of a generated namespace lister that ensure uses.
type cachedGetter[T any] interface {
	Get(name string) (T, error)
}

// childOps are the reads, writes and merge rule for one kind of child.
type childOps[T metav1.Object] struct {
	kind string
	// cache reads the informer cache; client reads and writes the API server. The caches hold
	// only objects labelled as ours, so a same-named object someone else made is found only
	// through the client, after a create conflicts.
	cache  func(namespace string) cachedGetter[T]
	client func(namespace string) typedClient[T]
	// merge returns existing brought to desired and whether anything changed. existing comes
	// from the informer cache: merge must copy it before changing anything.
	merge func(existing, desired T) (T, bool)
}

// ensure creates desired when missing and updates it when it drifted; created says it was
// missing. A same-named object not controlled by the cluster yields a *conflictError and is
// left untouched.
func ensure[T metav1.Object](ctx context.Context, c *Controller, cluster *v1alpha1.MySQLCluster, ops childOps[T], desired T) (_ T, created bool, _ error) {
	var zero T
	logger := klog.FromContext(ctx)
	name := desired.GetName()
	client := ops.client(desired.GetNamespace())
	existing, err := ops.cache(desired.GetNamespace()).Get(name)
	if err == nil || apierrors.IsNotFound(err) {
		var found bool
		if existing, found = ownwrites.Latest(c.written, desired.GetNamespace(), name, existing, err == nil); found {
			err = nil
		}
	}
	if apierrors.IsNotFound(err) {
		obj, err := client.Create(ctx, desired, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			other, getErr := client.Get(ctx, name, metav1.GetOptions{})
			if getErr == nil && !metav1.IsControlledBy(other, cluster) {
				return zero, false, &conflictError{kind: ops.kind, name: name}
			}
			// Ours but not in the cache yet: retry once the informer caught up.
		}
		if err != nil {
			return zero, false, fmt.Errorf("create %s %s: %w", ops.kind, name, err)
		}
		c.written.Wrote(obj)
		logger.V(2).Info("Created child", "kind", ops.kind, "object", klog.KObj(obj))
		noteChange(ctx, c, cluster, events.Created, ops.kind, name)
		return obj, true, nil
	}
	if err != nil {
		return zero, false, fmt.Errorf("get %s %s: %w", ops.kind, name, err)
	}
	if !metav1.IsControlledBy(existing, cluster) {
		return zero, false, &conflictError{kind: ops.kind, name: name}
	}
	merged, changed := ops.merge(existing, desired)
	if !changed {
		return existing, false, nil
	}
	updated, err := client.Update(ctx, merged, metav1.UpdateOptions{})
	if err != nil {
		return zero, false, fmt.Errorf("update %s %s: %w", ops.kind, name, err)
	}
	c.written.Wrote(updated)
	logger.V(2).Info("Updated child", "kind", ops.kind, "object", klog.KObj(updated))
	noteChange(ctx, c, cluster, events.Updated, ops.kind, name)
	return updated, false, nil
}

// changeLog collects the children one reconcile created and updated, so that it emits one
// event of each rather than one per child: events are API requests too, and a new cluster has
// ten children. One reconcile runs on one goroutine: it needs no lock.
type changeLog struct {
	byReason map[events.Event][]string
}

type changeLogKey struct{}

// withChangeLog returns a context whose changes are collected until flush or hold is called.
func withChangeLog(ctx context.Context) (context.Context, *changeLog) {
	l := &changeLog{byReason: map[events.Event][]string{}}
	return context.WithValue(ctx, changeLogKey{}, l), l
}

// noteChange records that ev (Created or Updated) happened to the child kind/name: into the
// context's change log, or as an event at once when there is none.
func noteChange(ctx context.Context, c *Controller, cluster *v1alpha1.MySQLCluster, ev events.Event, kind, name string) {
	l, ok := ctx.Value(changeLogKey{}).(*changeLog)
	if !ok {
		ev.Record(c.recorder, cluster, kind+" "+name)
		return
	}
	l.byReason[ev] = append(l.byReason[ev], kind+" "+name)
}

// hold keeps the children created so far for the cluster's next flush instead of emitting
// them now (the first reconcile of a new cluster creates only what its pods need). Updates
// are never held.
func (l *changeLog) hold(c *Controller, cluster *v1alpha1.MySQLCluster) {
	key := cache.MetaObjectToName(cluster)
	if created := l.byReason[events.Created]; len(created) > 0 {
		held, _ := c.heldChanges.Load(key)
		prev, _ := held.([]string)
		c.heldChanges.Store(key, append(slices.Clone(prev), created...))
	}
	delete(l.byReason, events.Created)
	l.emit(c, cluster)
}

// flush emits one event per kind of change collected, the held creations included.
func (l *changeLog) flush(c *Controller, cluster *v1alpha1.MySQLCluster) {
	if held, ok := c.heldChanges.LoadAndDelete(cache.MetaObjectToName(cluster)); ok {
		l.byReason[events.Created] = append(held.([]string), l.byReason[events.Created]...)
	}
	l.emit(c, cluster)
}

// emit records one event per kind of change in the log and empties it.
func (l *changeLog) emit(c *Controller, cluster *v1alpha1.MySQLCluster) {
	for _, ev := range []events.Event{events.Created, events.Updated} {
		if children := l.byReason[ev]; len(children) > 0 {
			ev.Record(c.recorder, cluster, strings.Join(children, ", "))
		}
	}
	clear(l.byReason)
}

// setSpecHash records the hash of spec on obj, so later reconciles compare hashes rather than
// objects the API server has defaulted.
func setSpecHash(obj metav1.Object, spec any) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[v1alpha1.AnnotationSpecHash] = resources.Hash(spec)
	obj.SetAnnotations(a)
}

// metaDrifted reports whether existing lacks desired's labels or spec hash.
func metaDrifted(existing, desired metav1.Object) bool {
	return labelsDrifted(existing, desired) ||
		existing.GetAnnotations()[v1alpha1.AnnotationSpecHash] != desired.GetAnnotations()[v1alpha1.AnnotationSpecHash]
}

// labelsDrifted reports whether existing lacks one of desired's labels.
func labelsDrifted(existing, desired metav1.Object) bool {
	for k, v := range desired.GetLabels() {
		if existing.GetLabels()[k] != v {
			return true
		}
	}
	return false
}

// mergeDrifted is the merge of a child whose body is replaced whole: nothing while its labels
// and spec hash match, else a copy of existing with the desired metadata and, by copyBody,
// the desired body.
func mergeDrifted[T interface {
	metav1.Object
	DeepCopy() T
}](copyBody func(out, desired T)) func(existing, desired T) (T, bool) {
	return func(existing, desired T) (T, bool) {
		if !metaDrifted(existing, desired) {
			return existing, false
		}
		out := existing.DeepCopy()
		applyMeta(out, desired)
		copyBody(out, desired)
		return out, true
	}
}

// applyMeta copies desired's labels and spec hash onto out (a copy of the existing object),
// keeping labels and annotations that others added.
func applyMeta(out, desired metav1.Object) {
	l := out.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range desired.GetLabels() {
		l[k] = v
	}
	out.SetLabels(l)
	a := out.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	if h, ok := desired.GetAnnotations()[v1alpha1.AnnotationSpecHash]; ok {
		a[v1alpha1.AnnotationSpecHash] = h
	}
	out.SetAnnotations(a)
}

func (c *Controller) serviceOps() childOps[*corev1.Service] {
	return childOps[*corev1.Service]{
		kind:   "Service",
		cache:  func(ns string) cachedGetter[*corev1.Service] { return c.services.Services(ns) },
		client: func(ns string) typedClient[*corev1.Service] { return c.kube.CoreV1().Services(ns) },
		merge: func(existing, desired *corev1.Service) (*corev1.Service, bool) {
			if !metaDrifted(existing, desired) {
				return existing, false
			}
			out := existing.DeepCopy()
			applyMeta(out, desired)
			// Cluster IPs and IP families are assigned by the API server: keep them.
			out.Spec.Type = desired.Spec.Type
			out.Spec.Selector = desired.Spec.Selector
			out.Spec.Ports = desired.Spec.Ports
			out.Spec.PublishNotReadyAddresses = desired.Spec.PublishNotReadyAddresses
			return out, true
		},
	}
}

func (c *Controller) configMapOps() childOps[*corev1.ConfigMap] {
	return childOps[*corev1.ConfigMap]{
		kind:   "ConfigMap",
		cache:  func(ns string) cachedGetter[*corev1.ConfigMap] { return c.configMaps.ConfigMaps(ns) },
		client: func(ns string) typedClient[*corev1.ConfigMap] { return c.kube.CoreV1().ConfigMaps(ns) },
		merge:  mergeDrifted(func(out, desired *corev1.ConfigMap) { out.Data = desired.Data }),
	}
}

func (c *Controller) secretOps(cluster *v1alpha1.MySQLCluster) childOps[*corev1.Secret] {
	return childOps[*corev1.Secret]{
		kind:   "Secret",
		cache:  func(ns string) cachedGetter[*corev1.Secret] { return c.secrets.Secrets(ns) },
		client: func(ns string) typedClient[*corev1.Secret] { return c.kube.CoreV1().Secrets(ns) },
		// Secret data is never hashed into an annotation; existing values are never replaced.
		merge: func(existing, desired *corev1.Secret) (*corev1.Secret, bool) {
			missing := secret.Missing(cluster, existing.Data)
			if len(missing) == 0 && !labelsDrifted(existing, desired) {
				return existing, false
			}
			out := existing.DeepCopy()
			applyMeta(out, desired)
			if out.Data == nil {
				out.Data = map[string][]byte{}
			}
			for _, k := range missing {
				out.Data[k] = desired.Data[k]
			}
			return out, true
		},
	}
}

func (c *Controller) pdbOps() childOps[*policyv1.PodDisruptionBudget] {
	return childOps[*policyv1.PodDisruptionBudget]{
		kind:  "PodDisruptionBudget",
		cache: func(ns string) cachedGetter[*policyv1.PodDisruptionBudget] { return c.pdbs.PodDisruptionBudgets(ns) },
		client: func(ns string) typedClient[*policyv1.PodDisruptionBudget] {
			return c.kube.PolicyV1().PodDisruptionBudgets(ns)
		},
		merge: mergeDrifted(func(out, desired *policyv1.PodDisruptionBudget) { out.Spec = desired.Spec }),
	}
}

func (c *Controller) networkPolicyOps() childOps[*networkingv1.NetworkPolicy] {
	return childOps[*networkingv1.NetworkPolicy]{
		kind:  "NetworkPolicy",
		cache: func(ns string) cachedGetter[*networkingv1.NetworkPolicy] { return c.netpols.NetworkPolicies(ns) },
		client: func(ns string) typedClient[*networkingv1.NetworkPolicy] {
			return c.kube.NetworkingV1().NetworkPolicies(ns)
		},
		merge: mergeDrifted(func(out, desired *networkingv1.NetworkPolicy) { out.Spec = desired.Spec }),
	}
}

func (c *Controller) statefulSetOps() childOps[*appsv1.StatefulSet] {
	return childOps[*appsv1.StatefulSet]{
		kind:   "StatefulSet",
		cache:  func(ns string) cachedGetter[*appsv1.StatefulSet] { return c.statefulSets.StatefulSets(ns) },
		client: func(ns string) typedClient[*appsv1.StatefulSet] { return c.kube.AppsV1().StatefulSets(ns) },
		merge: func(existing, desired *appsv1.StatefulSet) (*appsv1.StatefulSet, bool) {
			if !metaDrifted(existing, desired) {
				return existing, false
			}
			out := existing.DeepCopy()
			applyMeta(out, desired)
			// Only the mutable fields: selector, serviceName, podManagementPolicy and the
			// volume claim templates are fixed at creation (the CRD keeps the claim template
			// immutable for the same reason).
			out.Spec.Replicas = desired.Spec.Replicas
			out.Spec.Template = desired.Spec.Template
			out.Spec.UpdateStrategy = desired.Spec.UpdateStrategy
			out.Spec.PersistentVolumeClaimRetentionPolicy = desired.Spec.PersistentVolumeClaimRetentionPolicy
			return out, true
		},
	}
}
