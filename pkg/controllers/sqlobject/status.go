package sqlobject

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Ready condition reasons besides the connector's.
const (
	// ReasonReconciled: the object in the database matches the spec.
	ReasonReconciled = "Reconciled"
	// ReasonInvalidSpec: the spec cannot be acted on.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSQLError: the server refused a statement; its message says why. Retried with backoff.
	ReasonSQLError = "SQLError"
	// ReasonDeleting: the object waits to be dropped from the database.
	ReasonDeleting = "Deleting"
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

// HasFinalizer reports whether o carries finalizer f.
func HasFinalizer(o metav1.Object, f string) bool { return slices.Contains(o.GetFinalizers(), f) }

// RemoveFinalizer removes f from o (a copy, never a cached object).
func RemoveFinalizer(o metav1.Object, f string) {
	o.SetFinalizers(slices.DeleteFunc(slices.Clone(o.GetFinalizers()), func(s string) bool { return s == f }))
}
