package sqlobject

import (
	"context"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// SetComplete sets the Complete condition of a job (a backup or a restore) in conds for
// generation and reports whether its status, reason or message changed (worth an event).
func SetComplete(conds *[]metav1.Condition, generation int64, status metav1.ConditionStatus, reason, message string) bool {
	prev := meta.FindStatusCondition(*conds, v1alpha1.ConditionComplete)
	changed := prev == nil || prev.Status != status || prev.Reason != reason || prev.Message != message
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: v1alpha1.ConditionComplete, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
	return changed
}

// SetReady sets the Ready condition in conds for generation and reports whether the
// condition's status changed (a transition, worth an event).
func SetReady(conds *[]metav1.Condition, generation int64, ready bool, reason, message string) bool {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	prev := meta.FindStatusCondition(*conds, v1alpha1.ConditionReady)
	transition := prev == nil || prev.Status != status || prev.Reason != reason
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: v1alpha1.ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
	return transition
}

// Object is a generated API object: metadata and a typed deep copy.
type Object[T any] interface {
	metav1.Object
	DeepCopy() T
}

// Update is a typed client's Update or UpdateStatus.
type Update[T any] func(context.Context, T, metav1.UpdateOptions) (T, error)

// WriteStatus writes st as the status of (a copy of) cached through update, the client's
// UpdateStatus, unless it equals the cached status. status returns an object's status field.
// An object that is gone is not an error.
func WriteStatus[T Object[T], S any](ctx context.Context, cached T, st *S, status func(T) *S, update Update[T]) error {
	_, err := UpdateStatus(ctx, cached, st, status, update)
	return err
}

// UpdateStatus is WriteStatus that also returns the object as written (cached itself when
// nothing was written), for a caller that writes again in the same reconcile.
func UpdateStatus[T Object[T], S any](ctx context.Context, cached T, st *S, status func(T) *S, update Update[T]) (T, error) {
	if apiequality.Semantic.DeepEqual(status(cached), st) {
		return cached, nil
	}
	o := cached.DeepCopy()
	*status(o) = *st
	updated, err := update(ctx, o, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return cached, nil
		}
		return cached, fmt.Errorf("write status of %s: %w", klog.KObj(o), err)
	}
	return updated, nil
}

// HasFinalizer reports whether o carries finalizer f.
func HasFinalizer(o metav1.Object, f string) bool { return slices.Contains(o.GetFinalizers(), f) }

// AddFinalizer adds f to (a copy of) cached through update unless it is there, and returns
// the object as the API server has it.
func AddFinalizer[T Object[T]](ctx context.Context, cached T, f string, update Update[T]) (T, error) {
	if HasFinalizer(cached, f) {
		return cached, nil
	}
	o := cached.DeepCopy()
	o.SetFinalizers(append(slices.Clone(o.GetFinalizers()), f))
	updated, err := update(ctx, o, metav1.UpdateOptions{})
	if err != nil {
		return cached, fmt.Errorf("add finalizer to %s: %w", klog.KObj(o), err)
	}
	return updated, nil
}

// RemoveFinalizer removes f from (a copy of) cached through update; an object that is gone
// is not an error.
func RemoveFinalizer[T Object[T]](ctx context.Context, cached T, f string, update Update[T]) error {
	o := cached.DeepCopy()
	o.SetFinalizers(slices.DeleteFunc(slices.Clone(o.GetFinalizers()), func(s string) bool { return s == f }))
	if _, err := update(ctx, o, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer of %s: %w", klog.KObj(o), err)
	}
	return nil
}
