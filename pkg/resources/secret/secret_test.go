package secret

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

func TestNewGeneratesAllKeys(t *testing.T) {
	s, err := New(testutil.Cluster("ns", "db"), nil, "v1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{resources.SecretKeyRootPassword, resources.SecretKeyReplicationPassword, resources.SecretKeyOperatorPassword, resources.SecretKeyAgentToken} {
		if len(s.Data[k]) != passwordLength {
			t.Errorf("%s has %d bytes, want %d", k, len(s.Data[k]), passwordLength)
		}
	}
	if bytes.Equal(s.Data[resources.SecretKeyRootPassword], s.Data[resources.SecretKeyReplicationPassword]) {
		t.Error("two generated passwords are equal")
	}
}

func TestNewKeepsExistingValues(t *testing.T) {
	existing := map[string][]byte{resources.SecretKeyRootPassword: []byte("keep-me"), "extra": []byte("x")}
	s, err := New(testutil.Cluster("ns", "db"), existing, "v1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data[resources.SecretKeyRootPassword]) != "keep-me" || string(s.Data["extra"]) != "x" {
		t.Errorf("existing values were replaced")
	}
	if string(existing[resources.SecretKeyReplicationPassword]) != "" {
		t.Error("New modified its input map")
	}
}

func TestNoRootKeyWhenUserBringsOne(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.RootPasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "mine"}
	})
	s, err := New(c, nil, "v1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Data[resources.SecretKeyRootPassword]; ok {
		t.Error("root password generated although the user references a Secret")
	}
	if got := Missing(c, s.Data); len(got) != 0 {
		t.Errorf("Missing = %v after New", got)
	}
}

func TestPasswordAlphabetAndRandomness(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		p, err := Password(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != passwordLength || strings.Trim(string(p), alphabet) != "" {
			t.Fatalf("password %q has wrong length or characters", p)
		}
		seen[string(p)] = true
	}
	if len(seen) != 100 {
		t.Errorf("only %d distinct passwords in 100", len(seen))
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

func TestPasswordReportsRandomFailure(t *testing.T) {
	if _, err := New(testutil.Cluster("ns", "db"), nil, "v1", failingReader{}); err == nil {
		t.Fatal("want an error when the random source fails")
	}
}

// The agent certificate is a valid pair for the agents' server name, generated once and kept,
// and regenerated as a pair when either half is missing.
func TestAgentCertificate(t *testing.T) {
	c := testutil.Cluster("ns", "db")
	s, err := New(c, nil, "v1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := s.Data[resources.SecretKeyAgentTLSCert], s.Data[resources.SecretKeyAgentTLSKey]
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: agentapi.ServerName, Roots: pool}); err != nil {
		t.Errorf("the certificate does not verify for %s: %v", agentapi.ServerName, err)
	}
	if left := time.Until(leaf.NotAfter); left < 9*365*24*time.Hour {
		t.Errorf("the certificate expires in %v", left)
	}
	again, err := New(c, s.Data, "v1", rand.Reader)
	if err != nil || !bytes.Equal(again.Data[resources.SecretKeyAgentTLSCert], cert) || !bytes.Equal(again.Data[resources.SecretKeyAgentTLSKey], key) {
		t.Fatalf("the certificate changed on a second reconcile (%v)", err)
	}
	halved := maps.Clone(s.Data)
	delete(halved, resources.SecretKeyAgentTLSKey)
	if got := Missing(c, halved); !slices.Contains(got, resources.SecretKeyAgentTLSCert) || !slices.Contains(got, resources.SecretKeyAgentTLSKey) {
		t.Errorf("Missing = %v with the key gone: both halves must be replaced", got)
	}
	renewed, err := New(c, halved, "v1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(renewed.Data[resources.SecretKeyAgentTLSCert], renewed.Data[resources.SecretKeyAgentTLSKey]); err != nil {
		t.Errorf("the renewed halves do not match: %v", err)
	}
}

func TestGetRefusesASecretTheClusterDoesNotControl(t *testing.T) {
	c := testutil.Cluster("ns", "db")
	own, err := New(c, nil, "v1", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	own.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(c, v1alpha1.SchemeGroupVersion.WithKind("MySQLCluster"))}
	foreign := own.DeepCopy()
	foreign.OwnerReferences = nil
	other := own.DeepCopy()
	other.OwnerReferences[0].UID = "someone-else"
	for _, tc := range []struct {
		name   string
		stored *corev1.Secret
		check  func(error) bool
	}{
		{"none", nil, apierrors.IsNotFound},
		{"the cluster's own", own, func(err error) bool { return err == nil }},
		{"no owner", foreign, isNotControlled},
		{"another cluster of that name", other, isNotControlled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if tc.stored != nil {
				if err := idx.Add(tc.stored); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Get(corelisters.NewSecretLister(idx), c)
			if !tc.check(err) {
				t.Fatalf("Get: %v", err)
			}
			if err == nil && got.Name != resources.CredentialsSecretName(c) {
				t.Errorf("got %s", got.Name)
			}
			if err != nil && strings.Contains(err.Error(), string(own.Data[resources.SecretKeyOperatorPassword])) {
				t.Error("the error quotes a password")
			}
		})
	}
}

func isNotControlled(err error) bool {
	var nc *NotControlledError
	return errors.As(err, &nc)
}
