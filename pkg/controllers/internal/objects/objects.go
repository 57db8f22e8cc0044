// Package objects changes API objects the way every controller must: on a copy of the cached
// object, skipping writes that change nothing, status through the status subresource, and
// metadata through one merge-patch helper. It also sets the conditions the job and SQL-object
// controllers share.
package objects

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

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

// RemoveFinalizers removes fs from (a copy of) cached through update, in one write and only
// if it carries any of them; an object that is gone is not an error.
func RemoveFinalizers[T Object[T]](ctx context.Context, cached T, update Update[T], fs ...string) error {
	kept := slices.DeleteFunc(slices.Clone(cached.GetFinalizers()), func(s string) bool { return slices.Contains(fs, s) })
	if len(kept) == len(cached.GetFinalizers()) {
		return nil
	}
	o := cached.DeepCopy()
	o.SetFinalizers(kept)
	if _, err := update(ctx, o, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizers of %s: %w", klog.KObj(o), err)
	}
	return nil
}

// Patch is a typed client's Patch.
type Patch[T any] func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)

// Metadata is a change of an object's labels and annotations: a key mapped to nil is removed,
// keys not named are left as they are.
type Metadata struct {
	// Labels to set (or, mapped to nil, remove).
	Labels map[string]*string
	// Annotations to set (or, mapped to nil, remove).
	Annotations map[string]*string
}

// Value returns a pointer to v, for a Metadata value.
func Value(v string) *string { return &v }

// IsEmpty reports whether m changes nothing.
func (m Metadata) IsEmpty() bool { return len(m.Labels) == 0 && len(m.Annotations) == 0 }

// PatchMetadata applies m to object name through patch as a JSON merge patch, which touches
// no other field and needs no resourceVersion: the operator's own keys never race with a
// user's edit of the rest of the object.
func PatchMetadata[T any](ctx context.Context, patch Patch[T], name string, m Metadata) (T, error) {
	body := map[string]any{}
	if len(m.Labels) > 0 {
		body["labels"] = m.Labels
	}
	if len(m.Annotations) > 0 {
		body["annotations"] = m.Annotations
	}
	data, err := json.Marshal(map[string]any{"metadata": body})
	if err != nil {
		var zero T
		return zero, fmt.Errorf("patch metadata of %s: %w", name, err)
	}
	out, err := patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return out, fmt.Errorf("patch metadata of %s: %w", name, err)
	}
	return out, nil
}
