package job

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Storage credentials are read only from a Secret labelled for the purpose, need both keys,
// and never appear in an error.
func TestStorageConfig(t *testing.T) {
	b := &v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "u1"},
		Spec: v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{
			Bucket: "bk", Endpoint: "https://s3", CredentialsSecretRef: v1alpha1.LocalReference{Name: "creds"},
			CASecretRef: &v1alpha1.SecretKeyRef{Name: "ca"}}}}}
	secret := func(labelled bool, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{}}
		if labelled {
			s.Labels = map[string]string{v1alpha1.LabelStorageCredentials: "true"}
		}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ca"}, Data: map[string][]byte{v1alpha1.DefaultSecretKey: []byte("PEM")}}
	full := map[string]string{keyAccessKeyID: "AKID", keySecretAccess: "s3cr3t"}
	for _, tc := range []struct {
		name    string
		creds   *corev1.Secret
		wantErr string
	}{
		{"not labelled", secret(false, full), "is not labelled"},
		{"a key missing", secret(true, map[string]string{keyAccessKeyID: "AKID"}), "needs keys"},
		{"missing", nil, "creds"},
		{"good", secret(true, full), ""},
	} {
		kube := fake.NewSimpleClientset(ca)
		if tc.creds != nil {
			_, _ = kube.CoreV1().Secrets("ns").Create(context.Background(), tc.creds, metav1.CreateOptions{})
		}
		cfg, err := StorageConfig(context.Background(), kube, b)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		case err != nil && strings.Contains(err.Error(), "s3cr3t"):
			t.Errorf("%s: the error shows the secret: %v", tc.name, err)
		case tc.wantErr == "" && (cfg.AccessKeyID != "AKID" || cfg.SecretAccessKey != "s3cr3t" || string(cfg.CA) != "PEM" || cfg.Bucket != "bk"):
			t.Errorf("%s: config %+v", tc.name, cfg)
		}
	}
	if got := ObjectName(b); got != "ns/db/b-u1.sql.zst" {
		t.Errorf("ObjectName = %q", got)
	}
	b.Spec.Method = v1alpha1.BackupPhysical
	if got := ObjectName(b); got != "ns/db/b-u1.xbstream.zst" || Method(b) != v1alpha1.BackupPhysical {
		t.Errorf("physical: ObjectName = %q, Method %q", got, Method(b))
	}
}
