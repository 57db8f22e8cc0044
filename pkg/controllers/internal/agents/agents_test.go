package agents

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/secret"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

// A client of a member's agent takes the address from the resolver and the token and pinned
// certificate from the cluster's own credentials Secret; without that Secret, or with one the
// cluster does not control, there is no client.
func TestDial(t *testing.T) {
	cl := testutil.Cluster("ns", "db")
	cert, _, err := secret.AgentCertificate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: resources.CredentialsSecretName(cl),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cl, v1alpha1.SchemeGroupVersion.WithKind("MySQLCluster"))}},
		Data: map[string][]byte{resources.SecretKeyAgentTLSCert: cert, resources.SecretKeyAgentToken: []byte("tok")}}
	lister := func(objs ...*corev1.Secret) corelisters.SecretLister {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		for _, o := range objs {
			_ = idx.Add(o)
		}
		return corelisters.NewSecretLister(idx)
	}
	resolve := func(_ *v1alpha1.MySQLCluster, pod string) (string, int) { return pod + ".example", 9443 }

	c, err := TLSDialer(lister(creds), resolve)(cl, "db-1")
	if err != nil {
		t.Fatal(err)
	}
	ac := c.(*agentapi.Client)
	if ac.BaseURL != "https://db-1.example:9443" || ac.Token != "tok" || ac.TLS == nil || ac.TLS.ServerName != agentapi.ServerName {
		t.Errorf("client %+v", ac)
	}
	if _, err := TLSDialer(lister(), resolve)(cl, "db-1"); err == nil || !strings.Contains(err.Error(), "MySQLCluster db") {
		t.Errorf("without the Secret: %v", err)
	}
	// A member that serves TLS is verified under the cluster's CA for its DNS name, whatever
	// address is dialled; the pinned certificate is not trusted for it.
	tlsCl := cl.DeepCopy()
	tlsCl.Status.Instances = []v1alpha1.InstanceStatus{{Name: "db-0"}, {Name: "db-1", TLS: true}}
	ca, err := pki.NewCA("ca", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bundle := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: resources.TLSSecretName(cl)}, Data: map[string][]byte{resources.SecretKeyCA: ca.CertPEM}}
	c, err = TLSDialer(lister(creds, bundle), resolve)(tlsCl, "db-1")
	if err != nil {
		t.Fatal(err)
	}
	ac = c.(*agentapi.Client)
	if ac.TLS.ServerName != "db-1.db-headless.ns.svc" || ac.TLS.RootCAs == nil || !ac.TLS.RootCAs.Equal(mustPool(t, ca.CertPEM)) {
		t.Errorf("client of a TLS member: server name %q", ac.TLS.ServerName)
	}
	if c, err := TLSDialer(lister(creds, bundle), resolve)(tlsCl, "db-0"); err != nil || c.(*agentapi.Client).TLS.ServerName != agentapi.ServerName {
		t.Errorf("a member without TLS: %v", err)
	}
	if _, err := TLSDialer(lister(creds), resolve)(tlsCl, "db-1"); err == nil {
		t.Error("a TLS member without the CA bundle gave a client")
	}
	foreign := creds.DeepCopy()
	foreign.OwnerReferences = nil
	if _, err := TLSDialer(lister(foreign), resolve)(cl, "db-1"); err == nil {
		t.Error("a Secret the cluster does not control gave a client")
	}
}

func mustPool(t *testing.T, pemBytes []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pemBytes) {
		t.Fatal("not PEM")
	}
	return p
}
