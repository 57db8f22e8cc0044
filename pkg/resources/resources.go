// Package resources holds what every child-object builder shares: names, labels, annotation
// keys, owner references and content hashes. The builders themselves live in the
// subpackages; all of them are pure functions of the MySQLCluster and their parameters.
package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"sort"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Container, volume and port names and numbers shared by the builders.
const (
	ContainerMySQL    = "mysqld"
	ContainerAgent    = "agent"
	ContainerToolbox  = "toolbox"
	ContainerInitCopy = "install-agent"
	ContainerInit     = "init"
	PortMySQL         = 3306
	PortAgent         = 9080
	PortMetrics       = 9104
	PortNameMySQL     = "mysql"
	PortNameAgent     = "agent"
	PortNameMetrics   = "metrics"
)

// Secret keys of the internal credentials Secret.
const (
	SecretKeyRootPassword        = "root-password"
	SecretKeyReplicationPassword = "replication-password"
	SecretKeyOperatorPassword    = "operator-password"
	SecretKeyAgentToken          = "agent-token"
	// SecretKeyAgentTLSCert and SecretKeyAgentTLSKey are the agents' self-signed serving
	// certificate and its key (PEM); clients pin the certificate.
	SecretKeyAgentTLSCert = "agent-tls.crt"
	SecretKeyAgentTLSKey  = "agent-tls.key"
)

// Keys of the TLS Secrets: corev1.TLSCertKey and corev1.TLSPrivateKeyKey, and the CA bundle.
const SecretKeyCA = "ca.crt"

// Names of a cluster's children.

// StatefulSetName is the name of the cluster's StatefulSet (and the prefix of its pods).
func StatefulSetName(c *v1alpha1.MySQLCluster) string { return c.Name }

// HeadlessServiceName is the governing Service that gives each member a stable DNS name.
func HeadlessServiceName(c *v1alpha1.MySQLCluster) string { return c.Name + "-headless" }

// PrimaryServiceName is the read-write Service.
func PrimaryServiceName(c *v1alpha1.MySQLCluster) string { return c.Name + "-primary" }

// ReplicasServiceName is the read-only Service.
func ReplicasServiceName(c *v1alpha1.MySQLCluster) string { return c.Name + "-replicas" }

// ConfigMapName holds my.cnf.
func ConfigMapName(c *v1alpha1.MySQLCluster) string { return c.Name + "-config" }

// CredentialsSecretName holds the internal credentials.
func CredentialsSecretName(c *v1alpha1.MySQLCluster) string { return c.Name + "-credentials" }

// TLSSecretName is the name of the Secret with the servers' certificate, its key and the CA
// bundle (tls.crt, tls.key, ca.crt), which every member mounts.
func TLSSecretName(c *v1alpha1.MySQLCluster) string { return c.Name + "-tls" }

// CAKeySecretName is the name of the Secret with the CA the operator issues the servers'
// certificate from (tls.crt, tls.key), when neither the user nor cert-manager provides one.
func CAKeySecretName(c *v1alpha1.MySQLCluster) string { return c.Name + "-ca-key" }

// CASecretName is the name of the Secret with the CA bundle (ca.crt) applications verify the
// servers with. It holds no private key.
func CASecretName(c *v1alpha1.MySQLCluster) string { return c.Name + "-ca" }

// TLSServerNames are the DNS names the servers' certificate holds: every member under the
// headless Service (a wildcard, so scaling needs no new certificate) and the primary and
// replicas Services, each in its short and qualified forms.
func TLSServerNames(c *v1alpha1.MySQLCluster) []string {
	var names []string
	for _, svc := range []string{PrimaryServiceName(c), ReplicasServiceName(c), HeadlessServiceName(c)} {
		names = append(names, svc, svc+"."+c.Namespace, svc+"."+c.Namespace+".svc", svc+"."+c.Namespace+".svc.cluster.local")
	}
	// The short forms too: a member's init calls its peers' agents as <pod>.<headless>.
	h := HeadlessServiceName(c)
	base := h + "." + c.Namespace
	return append(names, "*."+h, "*."+base, "*."+base+".svc", "*."+base+".svc.cluster.local")
}

// PDBName is the PodDisruptionBudget.
func PDBName(c *v1alpha1.MySQLCluster) string { return c.Name }

// ArchivePrefix is the object prefix, under the archive storage's prefix, of the cluster's
// binary log archive: <namespace>/<cluster>/binlog, and below it the timeline begun by the
// last restore that replaced the data in place (AnnotationArchiveTimeline), whose history
// does not continue the earlier chain.
func ArchivePrefix(c *v1alpha1.MySQLCluster) string {
	return path.Join(c.Namespace, c.Name, "binlog", c.Annotations[v1alpha1.AnnotationArchiveTimeline])
}

// timelineLayout is the format of AnnotationArchiveTimeline.
const timelineLayout = "20060102T150405Z"

// Timeline names the archive timeline a restore that started at t begins.
func Timeline(t time.Time) string { return t.UTC().Format(timelineLayout) }

// TimelineStart is when the cluster's current archive timeline began: the zero time when no
// restore replaced its data (or the annotation does not parse).
func TimelineStart(c *v1alpha1.MySQLCluster) time.Time {
	t, err := time.Parse(timelineLayout, c.Annotations[v1alpha1.AnnotationArchiveTimeline])
	if err != nil {
		return time.Time{}
	}
	return t
}

// NetworkPolicyName is the name of c's NetworkPolicy.
func NetworkPolicyName(c *v1alpha1.MySQLCluster) string { return c.Name }

// SelectorLabels select the cluster's pods. They are part of the StatefulSet's immutable
// selector, so they never change.
func SelectorLabels(c *v1alpha1.MySQLCluster) map[string]string {
	return map[string]string{
		v1alpha1.LabelName:    v1alpha1.AppName,
		v1alpha1.LabelCluster: c.Name,
	}
}

// Selector is SelectorLabels as a label selector string (status.selector, for kubectl scale).
func Selector(c *v1alpha1.MySQLCluster) string {
	return labels.SelectorFromSet(SelectorLabels(c)).String()
}

// Labels are the labels on every child of c.
func Labels(c *v1alpha1.MySQLCluster, operatorVersion string) map[string]string {
	l := SelectorLabels(c)
	l[v1alpha1.LabelInstance] = c.Name
	l[v1alpha1.LabelManagedBy] = v1alpha1.ManagedBy
	l[v1alpha1.LabelComponent] = v1alpha1.ComponentDatabase
	l[v1alpha1.LabelOperatorVersion] = operatorVersion
	return l
}

// ObjectMeta is the metadata every child of c starts from: name, namespace, labels and a
// controller owner reference to c.
func ObjectMeta(c *v1alpha1.MySQLCluster, name, operatorVersion string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       c.Namespace,
		Labels:          Labels(c, operatorVersion),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(c, v1alpha1.SchemeGroupVersion.WithKind("MySQLCluster"))},
	}
}

// Hash is a short, stable hash of v's JSON form (map keys are sorted by encoding/json).
func Hash(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only builder-made API types reach here; they always marshal.
		panic(fmt.Sprintf("hash: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// MergeLabels returns base with extra added where base has no such key.
func MergeLabels(base, extra map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range extra {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// SortedKeys returns m's keys in order.
func SortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Ordinal returns the StatefulSet ordinal of pod name in set setName, or -1.
func Ordinal(setName, podName string) int {
	n, err := agentapi.Ordinal(podName)
	if err != nil || podName != setName+"-"+strconv.Itoa(n) {
		return -1
	}
	return n
}

// Resolver returns the address the operator dials for a member pod.
type Resolver func(c *v1alpha1.MySQLCluster, pod string) (host string, port int)

// DNSResolver dials members by their stable DNS names under the headless Service.
func DNSResolver(c *v1alpha1.MySQLCluster, pod string) (string, int) {
	return fmt.Sprintf("%s.%s.%s.svc", pod, HeadlessServiceName(c), c.Namespace), PortMySQL
}
