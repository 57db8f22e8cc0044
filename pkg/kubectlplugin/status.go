package kubectlplugin

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Summary is a MySQLCluster at a glance: what `status` prints, and its -o json|yaml form.
type Summary struct {
	Namespace        string             `json:"namespace"`
	Cluster          string             `json:"cluster"`
	Flavor           string             `json:"flavor"`
	Phase            string             `json:"phase"`
	Primary          string             `json:"primary"`
	Version          string             `json:"version"`
	Members          int32              `json:"members"`
	ReadyMembers     int32              `json:"readyMembers"`
	PrimaryChanges   int64              `json:"primaryChanges"`
	Instances        []Instance         `json:"instances"`
	LastBackup       *Backup            `json:"lastBackup,omitempty"`
	RecoverableFrom  *metav1.Time       `json:"recoverableFrom,omitempty"`
	RecoverableUntil *metav1.Time       `json:"recoverableUntil,omitempty"`
	CertificateUntil *metav1.Time       `json:"certificateNotAfter,omitempty"`
	Conditions       []metav1.Condition `json:"conditions"`
}

// Instance is one member in a Summary.
type Instance struct {
	Name       string `json:"name"`
	Role       string `json:"role"`
	Ready      bool   `json:"ready"`
	LagSeconds *int64 `json:"lagSeconds,omitempty"`
	GTID       string `json:"gtid"`
	Version    string `json:"version"`
	TLS        bool   `json:"tls"`
}

// Backup is the newest complete backup in a Summary.
type Backup struct {
	Name      string       `json:"name"`
	Method    string       `json:"method"`
	Completed *metav1.Time `json:"completed"`
	SizeBytes int64        `json:"sizeBytes"`
}

// Summarize builds the Summary of cluster c from its status and its backups (any order).
func Summarize(c *v1alpha1.MySQLCluster, backups []v1alpha1.MySQLBackup) Summary {
	st := c.Status
	s := Summary{Namespace: c.Namespace, Cluster: c.Name, Flavor: string(c.Spec.Flavor), Phase: string(st.Phase), Primary: st.Primary,
		Version: st.CurrentVersion, Members: c.Spec.Members, ReadyMembers: st.ReadyMembers, PrimaryChanges: st.Epoch,
		RecoverableFrom: st.RecoverableFrom, RecoverableUntil: st.RecoverableUntil, Conditions: st.Conditions}
	if st.TLS != nil {
		s.CertificateUntil = st.TLS.ServerNotAfter
	}
	for _, in := range st.Instances {
		s.Instances = append(s.Instances, Instance{Name: in.Name, Role: in.Role, Ready: in.Ready, LagSeconds: in.LagSeconds,
			GTID: in.GTIDExecuted, Version: in.Version, TLS: in.TLS})
	}
	for _, b := range backups {
		if b.Spec.ClusterRef.Name != c.Name || b.Status.Phase != v1alpha1.JobComplete || b.Status.CompletionTime == nil {
			continue
		}
		if s.LastBackup == nil || b.Status.CompletionTime.After(s.LastBackup.Completed.Time) {
			method := string(b.Spec.Method)
			if method == "" {
				method = string(v1alpha1.BackupLogical)
			}
			s.LastBackup = &Backup{Name: b.Name, Method: method, Completed: b.Status.CompletionTime, SizeBytes: b.Status.SizeBytes}
		}
	}
	slices.SortFunc(s.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	return s
}

// PrintSummary writes s as a person reads it; now dates the ages.
func PrintSummary(w io.Writer, s Summary, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Cluster:\t%s/%s (%s %s)\n", s.Namespace, s.Cluster, s.Flavor, s.Version)
	fmt.Fprintf(tw, "Phase:\t%s, %d/%d members ready\n", s.Phase, s.ReadyMembers, s.Members)
	fmt.Fprintf(tw, "Primary:\t%s (%d primary changes)\n", orNone(s.Primary), s.PrimaryChanges)
	if b := s.LastBackup; b != nil {
		fmt.Fprintf(tw, "Last backup:\t%s (%s, %s, %s ago)\n", b.Name, b.Method, bytesString(b.SizeBytes), age(now, b.Completed.Time))
	} else {
		fmt.Fprintf(tw, "Last backup:\tnone complete\n")
	}
	if s.RecoverableFrom != nil && s.RecoverableUntil != nil {
		fmt.Fprintf(tw, "Recoverable:\t%s to %s\n", s.RecoverableFrom.UTC().Format(time.RFC3339), s.RecoverableUntil.UTC().Format(time.RFC3339))
	}
	if s.CertificateUntil != nil {
		fmt.Fprintf(tw, "Certificate:\tvalid until %s (%s)\n", s.CertificateUntil.UTC().Format(time.RFC3339), age(s.CertificateUntil.Time, now))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "MEMBER\tROLE\tREADY\tLAG\tGTID\tVERSION\tTLS")
	for _, in := range s.Instances {
		lag := "-"
		if in.LagSeconds != nil {
			lag = fmt.Sprintf("%ds", *in.LagSeconds)
		}
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\t%s\t%t\n", in.Name, orNone(in.Role), in.Ready, lag, orNone(in.GTID), orNone(in.Version), in.TLS)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "CONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, c := range s.Conditions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age is t2-t1 rounded for a person: 45s, 12m, 5h, 3d.
func age(t2, t1 time.Time) string {
	d := t2.Sub(t1)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func bytesString(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
