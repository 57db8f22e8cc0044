package cluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
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

// childOps are the side effects and the merge rule for one kind of child.
type childOps[T metav1.Object] struct {
	kind string
	get  func(namespace, name string) (T, error)
	// live reads from the API server. The caches hold only objects labelled as ours, so a
	// same-named object someone else made is found only this way, after a create conflicts.
	live   func(ctx context.Context, namespace, name string) (T, error)
	create func(ctx context.Context, obj T) (T, error)
	update func(ctx context.Context, obj T) (T, error)
	// merge returns existing brought to desired and whether anything changed. existing comes
	// from the informer cache: merge must copy it before changing anything.
	merge func(existing, desired T) (T, bool)
}

// ensure creates desired when missing and updates it when it drifted. A same-named object not
// controlled by the cluster yields a *conflictError and is left untouched.
func ensure[T metav1.Object](ctx context.Context, c *Controller, cluster *v1alpha1.MySQLCluster, ops childOps[T], desired T) (T, error) {
	var zero T
	logger := klog.FromContext(ctx)
	name := desired.GetName()
	existing, err := ops.get(desired.GetNamespace(), name)
	if apierrors.IsNotFound(err) {
		created, err := ops.create(ctx, desired)
		if apierrors.IsAlreadyExists(err) {
			other, getErr := ops.live(ctx, desired.GetNamespace(), name)
			if getErr == nil && !metav1.IsControlledBy(other, cluster) {
				return zero, &conflictError{kind: ops.kind, name: name}
			}
			// Ours but not in the cache yet: retry once the informer caught up.
		}
		if err != nil {
			return zero, fmt.Errorf("create %s %s: %w", ops.kind, name, err)
		}
		logger.V(2).Info("Created child", "kind", ops.kind, "object", klog.KObj(created))
		c.recorder.Eventf(cluster, corev1.EventTypeNormal, events.Created, "Created %s %s", ops.kind, name)
		return created, nil
	}
	if err != nil {
		return zero, fmt.Errorf("get %s %s: %w", ops.kind, name, err)
	}
	if !metav1.IsControlledBy(existing, cluster) {
		return zero, &conflictError{kind: ops.kind, name: name}
	}
	merged, changed := ops.merge(existing, desired)
	if !changed {
		return existing, nil
	}
	updated, err := ops.update(ctx, merged)
	if err != nil {
		return zero, fmt.Errorf("update %s %s: %w", ops.kind, name, err)
	}
	logger.V(2).Info("Updated child", "kind", ops.kind, "object", klog.KObj(updated))
	c.recorder.Eventf(cluster, corev1.EventTypeNormal, events.Updated, "Updated %s %s", ops.kind, name)
	return updated, nil
}

// setSpecHash records the hash of spec on obj, so later reconciles compare hashes rather than
// objects the API server has defaulted.
func setSpecHash(obj metav1.Object, spec any) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[resources.AnnotationSpecHash] = resources.Hash(spec)
	obj.SetAnnotations(a)
}

// metaDrifted reports whether existing lacks desired's labels or spec hash.
func metaDrifted(existing, desired metav1.Object) bool {
	for k, v := range desired.GetLabels() {
		if existing.GetLabels()[k] != v {
			return true
		}
	}
	return existing.GetAnnotations()[resources.AnnotationSpecHash] != desired.GetAnnotations()[resources.AnnotationSpecHash]
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
	if h, ok := desired.GetAnnotations()[resources.AnnotationSpecHash]; ok {
		a[resources.AnnotationSpecHash] = h
	}
	out.SetAnnotations(a)
}

func (c *Controller) serviceOps() childOps[*corev1.Service] {
	return childOps[*corev1.Service]{
		kind: "Service",
		live: func(ctx context.Context, ns, name string) (*corev1.Service, error) {
			return c.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		},
		get: func(ns, name string) (*corev1.Service, error) { return c.services.Services(ns).Get(name) },
		create: func(ctx context.Context, o *corev1.Service) (*corev1.Service, error) {
			return c.kube.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *corev1.Service) (*corev1.Service, error) {
			return c.kube.CoreV1().Services(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		},
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
		kind: "ConfigMap",
		live: func(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
			return c.kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		},
		get: func(ns, name string) (*corev1.ConfigMap, error) { return c.configMaps.ConfigMaps(ns).Get(name) },
		create: func(ctx context.Context, o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
			return c.kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
			return c.kube.CoreV1().ConfigMaps(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		},
		merge: func(existing, desired *corev1.ConfigMap) (*corev1.ConfigMap, bool) {
			if !metaDrifted(existing, desired) {
				return existing, false
			}
			out := existing.DeepCopy()
			applyMeta(out, desired)
			out.Data = desired.Data
			return out, true
		},
	}
}

func (c *Controller) secretOps(cluster *v1alpha1.MySQLCluster) childOps[*corev1.Secret] {
	return childOps[*corev1.Secret]{
		kind: "Secret",
		live: func(ctx context.Context, ns, name string) (*corev1.Secret, error) {
			return c.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		get: func(ns, name string) (*corev1.Secret, error) { return c.secrets.Secrets(ns).Get(name) },
		create: func(ctx context.Context, o *corev1.Secret) (*corev1.Secret, error) {
			return c.kube.CoreV1().Secrets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *corev1.Secret) (*corev1.Secret, error) {
			return c.kube.CoreV1().Secrets(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		},
		// Secret data is never hashed into an annotation; existing values are never replaced.
		merge: func(existing, desired *corev1.Secret) (*corev1.Secret, bool) {
			missing := secret.Missing(cluster, existing.Data)
			labelsDrifted := false
			for k, v := range desired.Labels {
				if existing.Labels[k] != v {
					labelsDrifted = true
				}
			}
			if len(missing) == 0 && !labelsDrifted {
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
		kind: "PodDisruptionBudget",
		live: func(ctx context.Context, ns, name string) (*policyv1.PodDisruptionBudget, error) {
			return c.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		get: func(ns, name string) (*policyv1.PodDisruptionBudget, error) {
			return c.pdbs.PodDisruptionBudgets(ns).Get(name)
		},
		create: func(ctx context.Context, o *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
			return c.kube.PolicyV1().PodDisruptionBudgets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, error) {
			return c.kube.PolicyV1().PodDisruptionBudgets(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		},
		merge: func(existing, desired *policyv1.PodDisruptionBudget) (*policyv1.PodDisruptionBudget, bool) {
			if !metaDrifted(existing, desired) {
				return existing, false
			}
			out := existing.DeepCopy()
			applyMeta(out, desired)
			out.Spec = desired.Spec
			return out, true
		},
	}
}

func (c *Controller) statefulSetOps() childOps[*appsv1.StatefulSet] {
	return childOps[*appsv1.StatefulSet]{
		kind: "StatefulSet",
		live: func(ctx context.Context, ns, name string) (*appsv1.StatefulSet, error) {
			return c.kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		get: func(ns, name string) (*appsv1.StatefulSet, error) {
			return c.statefulSets.StatefulSets(ns).Get(name)
		},
		create: func(ctx context.Context, o *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
			return c.kube.AppsV1().StatefulSets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		},
		update: func(ctx context.Context, o *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
			return c.kube.AppsV1().StatefulSets(o.Namespace).Update(ctx, o, metav1.UpdateOptions{})
		},
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
