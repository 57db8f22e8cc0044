package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Bad MySQLCluster input is refused at admission, with a message naming what is wrong.
func TestBadClusterInputIsRefusedAtAdmission(t *testing.T) {
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		mutate func(*v1alpha1.MySQLCluster)
		says   string
	}{
		"name of 53 characters":      {func(c *v1alpha1.MySQLCluster) { c.Name = "d" + strings.Repeat("b", 52) }, "at most 52"},
		"name starting with a digit": {func(c *v1alpha1.MySQLCluster) { c.Name = "1db" }, "starting with a letter"},
		"owned key through skip-": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"skip-read-only": "ON"}
		}, "prefixes"},
		"owned key through loose_disable_": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"loose_disable_log_slave_updates": "1"}
		}, "prefixes"},
		"secure_file_priv": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"secure-file-priv": ""}
		}, "secure_file_priv"},
		"value over 1024": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"init_connect": v1alpha1.ConfigValue(strings.Repeat("x", 1025))}
		}, "1024"},
		"newline in a value": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"init_connect": "SET @a = 1\n!include /etc/passwd"}
		}, "should match"},
	} {
		c := newCluster(ns, "db", 1, "10.11.6")
		tc.mutate(c)
		_, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Create(ctx, c, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: created or wrong error: %v", name, err)
		}
	}
	// A free option with the loose_ prefix is accepted.
	c := newCluster(ns, "db", 1, "10.11.6")
	c.Spec.Config = map[string]v1alpha1.ConfigValue{"loose_innodb_buffer_pool_size": "64M"}
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Errorf("loose_ on a free option: %v", err)
	}
}

// A root password Secret that does not exist is named in a condition, not left to a member
// that never starts.
func TestMissingRootPasswordSecretIsNamed(t *testing.T) {
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	c := newCluster(ns, "db", 1, "10.11.6")
	c.Spec.RootPasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "absent-root"}
	createCluster(t, c)
	eventually(t, 30*time.Second, "Synced=False/SecretNotFound naming the Secret", func(ctx context.Context) (bool, error) {
		cond := meta.FindStatusCondition(getCluster(t, ns, "db").Status.Conditions, v1alpha1.ConditionSynced)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "SecretNotFound" && strings.Contains(cond.Message, "absent-root"), nil
	})
}
