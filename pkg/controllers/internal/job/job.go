// Package job is what the backup and restore controllers share: the storage configuration read
// from the user's Secrets, a backup's method and stored object name, and the Complete condition
// that reports a job.
package job

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Keys of a storage credentials Secret.
const (
	keyAccessKeyID  = "accessKeyId"
	keySecretAccess = "secretAccessKey"
)

// StorageConfig reads a backup's storage credentials (and CA) from the user's Secrets with a
// live GET: the operator caches no Secret it does not own. A credentials Secret without the
// opt-in label LabelStorageCredentials is refused before its keys are read.
func StorageConfig(ctx context.Context, kube kubernetes.Interface, b *v1alpha1.MySQLBackup) (agentapi.StorageConfig, error) {
	return StorageConfigOf(ctx, kube, b.Namespace, &b.Spec.Storage.S3)
}

// StorageConfigOf is StorageConfig for the S3 storage s3 of an object in namespace.
func StorageConfigOf(ctx context.Context, kube kubernetes.Interface, namespace string, s3 *v1alpha1.S3Storage) (agentapi.StorageConfig, error) {
	sec, err := kube.CoreV1().Secrets(namespace).Get(ctx, s3.CredentialsSecretRef.Name, metav1.GetOptions{})
	if err != nil {
		return agentapi.StorageConfig{}, fmt.Errorf("storage credentials Secret %s: %w", s3.CredentialsSecretRef.Name, err)
	}
	if sec.Labels[v1alpha1.LabelStorageCredentials] != "true" {
		return agentapi.StorageConfig{}, fmt.Errorf("storage credentials Secret %s is not labelled %s=true: label it to let backups in this namespace use it",
			s3.CredentialsSecretRef.Name, v1alpha1.LabelStorageCredentials)
	}
	id, secret := string(sec.Data[keyAccessKeyID]), string(sec.Data[keySecretAccess])
	if id == "" || secret == "" {
		return agentapi.StorageConfig{}, fmt.Errorf("storage credentials Secret %s needs keys %s and %s", s3.CredentialsSecretRef.Name, keyAccessKeyID, keySecretAccess)
	}
	cfg := agentapi.StorageConfig{Endpoint: s3.Endpoint, Region: s3.Region, Bucket: s3.Bucket, Prefix: s3.Prefix,
		ForcePathStyle: s3.ForcePathStyle, AccessKeyID: id, SecretAccessKey: secret}
	if ref := s3.CASecretRef; ref != nil {
		ca, err := kube.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return agentapi.StorageConfig{}, fmt.Errorf("storage CA Secret %s: %w", ref.Name, err)
		}
		k := ref.Key
		if k == "" {
			k = v1alpha1.DefaultSecretKey
		}
		cfg.CA = ca.Data[k]
	}
	return cfg, nil
}

// Method is b's method, logical when the spec leaves it out.
func Method(b *v1alpha1.MySQLBackup) v1alpha1.BackupMethod {
	if b.Spec.Method == "" {
		return v1alpha1.BackupLogical
	}
	return b.Spec.Method
}

// ObjectName is the object key of b under the storage prefix: namespace, cluster, backup name and
// UID, so that two backups never share an object.
func ObjectName(b *v1alpha1.MySQLBackup) string {
	ext := ".sql.zst"
	if Method(b) == v1alpha1.BackupPhysical {
		ext = ".xbstream.zst"
	}
	return fmt.Sprintf("%s/%s/%s-%s%s", b.Namespace, b.Spec.ClusterRef.Name, b.Name, b.UID, ext)
}

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

// Timeout is d when set and positive, else def: a job's spec.timeout.
func Timeout(d *metav1.Duration, def time.Duration) time.Duration {
	if d != nil && d.Duration > 0 {
		return d.Duration
	}
	return def
}
