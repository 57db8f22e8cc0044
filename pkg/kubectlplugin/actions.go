package kubectlplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

func statusCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "status CLUSTER",
		Short: "Members, roles, lag, GTIDs, readiness, the last backup and the conditions of a MySQLCluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := e.mysql.MysqlopV1alpha1().MySQLClusters(e.namespace).Get(ctx, args[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			backups, err := e.mysql.MysqlopV1alpha1().MySQLBackups(e.namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			s := Summarize(c, backups.Items)
			return e.print(s, func(w io.Writer) error { return PrintSummary(w, s, time.Now()) })
		},
	}
}

// switchoverTarget is the member to switch over to: to when given (a ready replica), else the
// ready replica with the least lag.
func switchoverTarget(c *v1alpha1.MySQLCluster, to string) (string, error) {
	st := c.Status
	if to != "" {
		i := slices.IndexFunc(st.Instances, func(in v1alpha1.InstanceStatus) bool { return in.Name == to })
		switch {
		case i < 0:
			return "", fmt.Errorf("%s is not a member of %s", to, c.Name)
		case to == st.Primary:
			return "", fmt.Errorf("%s is already the primary", to)
		case !st.Instances[i].Ready:
			return "", fmt.Errorf("%s is not ready: a switchover waits for a ready target", to)
		}
		return to, nil
	}
	best, bestLag := "", int64(math.MaxInt64)
	for _, in := range st.Instances {
		if in.Name == st.Primary || !in.Ready {
			continue
		}
		lag := int64(math.MaxInt64 - 1)
		if in.LagSeconds != nil {
			lag = *in.LagSeconds
		}
		if lag < bestLag {
			best, bestLag = in.Name, lag
		}
	}
	if best == "" {
		return "", fmt.Errorf("%s has no ready replica to switch over to", c.Name)
	}
	return best, nil
}

func switchoverCommand(e *env) *cobra.Command {
	var to string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "switchover CLUSTER [--to MEMBER]",
		Short: "Move the primary role to a ready replica without losing a write (default: the one with the least lag)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			clusters := e.mysql.MysqlopV1alpha1().MySQLClusters(e.namespace)
			c, err := clusters.Get(ctx, args[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			target, err := switchoverTarget(c, to)
			if err != nil {
				return err
			}
			if err := annotate(ctx, e, c.Name, v1alpha1.AnnotationSwitchoverTo, target); err != nil {
				return err
			}
			fmt.Fprintf(e.Err, "Switchover of %s from %s to %s requested\n", c.Name, c.Status.Primary, target)
			if wait <= 0 {
				return nil
			}
			start := time.Now()
			err = waitFor(ctx, wait, "switchover to "+target, func(ctx context.Context) (bool, error) {
				c, err := clusters.Get(ctx, args[0], metav1.GetOptions{})
				return err == nil && c.Status.Primary == target && c.Annotations[v1alpha1.AnnotationSwitchoverTo] == "", nil
			})
			if err == nil {
				fmt.Fprintf(e.Err, "%s is the primary (%v)\n", target, time.Since(start).Round(100*time.Millisecond))
			}
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "Member to make the primary (default: the ready replica with the least lag)")
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Minute, "How long to wait for the new primary (0: do not wait)")
	return cmd
}

func reseedCommand(e *env) *cobra.Command {
	var yes bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "reseed CLUSTER MEMBER",
		Short: "DELETE a replica's data and replace it with a copy of a healthy peer (after a confirmation)",
		Long: "reseed deletes every byte of the member's data, including transactions only it holds, and copies a healthy peer's\n" +
			"data in its place. It is how an errant or broken replica comes back. Never the primary (switch over first).",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			clusters := e.mysql.MysqlopV1alpha1().MySQLClusters(e.namespace)
			c, err := clusters.Get(ctx, args[0], metav1.GetOptions{})
			if err != nil {
				return err
			}
			member := args[1]
			if !slices.ContainsFunc(c.Status.Instances, func(in v1alpha1.InstanceStatus) bool { return in.Name == member }) {
				return fmt.Errorf("%s is not a member of %s", member, c.Name)
			}
			if member == c.Status.Primary {
				return fmt.Errorf("%s is the primary: switch over first (kubectl mysqlop switchover %s)", member, c.Name)
			}
			prompt := fmt.Sprintf("This DELETES all data of %s (cluster %s/%s) and replaces it with a copy of a healthy peer;\n"+
				"transactions only %s holds are lost.", member, e.namespace, c.Name, member)
			if err := e.confirm(yes, prompt, member); err != nil {
				return err
			}
			old, err := e.kube.CoreV1().Pods(e.namespace).Get(ctx, member, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := annotate(ctx, e, c.Name, v1alpha1.AnnotationReseed, member); err != nil {
				return err
			}
			fmt.Fprintf(e.Err, "Re-seed of %s requested\n", member)
			if wait <= 0 {
				return nil
			}
			start := time.Now()
			// The operator removes the request once the re-seed started (or refuses it with an
			// event), and a re-seed replaces the member's pod: done when a new pod of that name
			// is ready, which needs it to replicate on its new data. The cluster's status is not
			// enough: it can still show the old pod ready.
			err = waitFor(ctx, wait, "re-seed of "+member, func(ctx context.Context) (bool, error) {
				c, err := clusters.Get(ctx, args[0], metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				if _, pending := c.Annotations[v1alpha1.AnnotationReseed]; pending {
					return false, nil
				}
				p, err := e.kube.CoreV1().Pods(e.namespace).Get(ctx, member, metav1.GetOptions{})
				if err != nil || p.UID == old.UID {
					return false, nil
				}
				return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
					return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
				}), nil
			})
			if err == nil {
				fmt.Fprintf(e.Err, "%s re-seeded and ready (%v)\n", member, time.Since(start).Round(100*time.Millisecond))
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "Do not ask for a confirmation")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Minute, "How long to wait for the member to be ready again (0: do not wait)")
	return cmd
}

// annotate sets key=value on the cluster's metadata with a merge patch.
func annotate(ctx context.Context, e *env, cluster, key, value string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if err != nil {
		return err
	}
	if _, err := e.mysql.MysqlopV1alpha1().MySQLClusters(e.namespace).Patch(ctx, cluster, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotate %s: %w", cluster, err)
	}
	return nil
}

// backupSpec is the spec of an on-demand backup of cluster: the storage and method of the
// named schedule, or of the cluster's only schedule, or of the backup like names.
func backupSpec(cluster string, schedules []v1alpha1.MySQLBackupSchedule, schedule string, like *v1alpha1.MySQLBackup) (v1alpha1.MySQLBackupSpec, error) {
	if like != nil {
		if like.Spec.ClusterRef.Name != cluster {
			return v1alpha1.MySQLBackupSpec{}, fmt.Errorf("backup %s is of cluster %s, not %s", like.Name, like.Spec.ClusterRef.Name, cluster)
		}
		return v1alpha1.MySQLBackupSpec{ClusterRef: like.Spec.ClusterRef, Method: like.Spec.Method, Storage: like.Spec.Storage}, nil
	}
	var mine []v1alpha1.MySQLBackupSchedule
	for _, s := range schedules {
		if s.Spec.BackupTemplate.ClusterRef.Name == cluster && (schedule == "" || s.Name == schedule) {
			mine = append(mine, s)
		}
	}
	switch {
	case len(mine) == 1:
		t := mine[0].Spec.BackupTemplate
		return v1alpha1.MySQLBackupSpec{ClusterRef: t.ClusterRef, Method: t.Method, Storage: t.Storage, Timeout: t.Timeout}, nil
	case schedule != "":
		return v1alpha1.MySQLBackupSpec{}, fmt.Errorf("no MySQLBackupSchedule %s of cluster %s", schedule, cluster)
	case len(mine) == 0:
		return v1alpha1.MySQLBackupSpec{}, fmt.Errorf("cluster %s has no MySQLBackupSchedule to take the storage from: name a backup to copy it from with --like", cluster)
	}
	return v1alpha1.MySQLBackupSpec{}, fmt.Errorf("cluster %s has %d MySQLBackupSchedules: choose one with --schedule", cluster, len(mine))
}

func backupCommand(e *env) *cobra.Command {
	var schedule, like, method string
	var wait time.Duration
	now := &cobra.Command{
		Use:   "now CLUSTER",
		Short: "Take a backup now, to the storage of the cluster's schedule (--schedule) or of an earlier backup (--like)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api := e.mysql.MysqlopV1alpha1()
			if _, err := api.MySQLClusters(e.namespace).Get(ctx, args[0], metav1.GetOptions{}); err != nil {
				return err
			}
			var from *v1alpha1.MySQLBackup
			if like != "" {
				b, err := api.MySQLBackups(e.namespace).Get(ctx, like, metav1.GetOptions{})
				if err != nil {
					return err
				}
				from = b
			}
			schedules, err := api.MySQLBackupSchedules(e.namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			spec, err := backupSpec(args[0], schedules.Items, schedule, from)
			if err != nil {
				return err
			}
			if method != "" {
				spec.Method = v1alpha1.BackupMethod(method)
			}
			b := &v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{GenerateName: args[0] + "-now-", Namespace: e.namespace}, Spec: spec}
			if b, err = api.MySQLBackups(e.namespace).Create(ctx, b, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create backup: %w", err)
			}
			fmt.Fprintf(e.Err, "MySQLBackup %s created\n", b.Name)
			if wait > 0 {
				err = waitFor(ctx, wait, "backup "+b.Name, func(ctx context.Context) (bool, error) {
					if b, err = api.MySQLBackups(e.namespace).Get(ctx, b.Name, metav1.GetOptions{}); err != nil {
						return false, nil
					}
					if b.Status.Phase == v1alpha1.JobFailed {
						return false, fmt.Errorf("backup %s failed: kubectl describe mysqlbackup %s", b.Name, b.Name)
					}
					return b.Status.Phase == v1alpha1.JobComplete, nil
				})
				if err != nil {
					return err
				}
			}
			return e.print(b, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%s\t%s\t%s\n", b.Name, orNone(string(b.Status.Phase)), bytesString(b.Status.SizeBytes))
				return err
			})
		},
	}
	now.Flags().StringVar(&schedule, "schedule", "", "MySQLBackupSchedule whose storage and method to use (default: the cluster's only one)")
	now.Flags().StringVar(&like, "like", "", "MySQLBackup whose storage and method to use")
	now.Flags().StringVar(&method, "method", "", "logical or physical (default: as the schedule or backup it copies)")
	now.Flags().DurationVar(&wait, "wait", 0, "How long to wait for the backup to complete (0: do not wait)")
	cmd := &cobra.Command{Use: "backup", Short: "Backups"}
	cmd.AddCommand(now)
	return cmd
}

func restoreCommand(e *env) *cobra.Command {
	var from, toTime string
	var yes bool
	cmd := &cobra.Command{
		Use:   "restore CLUSTER --from BACKUP [--to-time RFC3339]",
		Short: "REPLACE a cluster's data with a backup's, optionally rolled forward to a time (after a confirmation)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if from == "" && toTime == "" {
				return fmt.Errorf("--from BACKUP, --to-time or both are needed")
			}
			spec := v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: args[0]}, BackupRef: v1alpha1.LocalReference{Name: from}}
			if toTime != "" {
				t, err := time.Parse(time.RFC3339, toTime)
				if err != nil {
					return fmt.Errorf("--to-time: %w", err)
				}
				spec.Target = &v1alpha1.RestoreTarget{Time: &metav1.Time{Time: t}}
			}
			api := e.mysql.MysqlopV1alpha1()
			if _, err := api.MySQLClusters(e.namespace).Get(ctx, args[0], metav1.GetOptions{}); err != nil {
				return err
			}
			prompt := fmt.Sprintf("This REPLACES all data of cluster %s/%s with backup %s%s; writes stop until it ends.",
				e.namespace, args[0], orNone(from), map[bool]string{true: " rolled forward to " + toTime, false: ""}[toTime != ""])
			if err := e.confirm(yes, prompt, args[0]); err != nil {
				return err
			}
			r := &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{GenerateName: args[0] + "-restore-", Namespace: e.namespace}, Spec: spec}
			r, err := api.MySQLRestores(e.namespace).Create(ctx, r, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create restore: %w", err)
			}
			fmt.Fprintf(e.Err, "MySQLRestore %s created: kubectl get mysqlrestore %s -w\n", r.Name, r.Name)
			return e.print(r, func(w io.Writer) error { _, err := fmt.Fprintln(w, r.Name); return err })
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "MySQLBackup to restore (with --to-time alone: the newest complete one before it)")
	cmd.Flags().StringVar(&toTime, "to-time", "", "Roll forward through the archived binary logs to this time (RFC 3339)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "Do not ask for a confirmation")
	return cmd
}
