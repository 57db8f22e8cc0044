package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	pkgmysql "github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/certs"
	"github.com/mysqlop/mysql-operator/test/localcluster"
)

// secretData reads a Secret of the test namespace.
func secretData(t *testing.T, secret string) map[string][]byte {
	t.Helper()
	s, err := lc.CP.Kube.CoreV1().Secrets(ns).Get(context.Background(), secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Data
}

// tlsSession connects to member m as an application would: through the pod's IP, trusting only
// the cluster's CA bundle (Secret <cluster>-ca) and requiring the member's DNS name. It returns
// the certificate the server presented and the session's TLS version.
func tlsSession(ctx context.Context, m, user, password string, caPEM []byte) (*x509.Certificate, string, error) {
	p, err := lc.CP.Kube.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	cfg, err := certs.ClientTLS(caPEM, fmt.Sprintf("%s.%s-headless.%s.svc", m, name, ns))
	if err != nil {
		return nil, "", err
	}
	var mu sync.Mutex
	var peer *x509.Certificate
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		mu.Lock()
		defer mu.Unlock()
		peer = cs.PeerCertificates[0]
		return nil
	}
	db, err := pkgmysql.Open(pkgmysql.ConnConfig{Addr: net.JoinHostPort(p.Status.PodIP, "3306"), User: user, Password: password, Timeout: 3 * time.Second, TLS: cfg})
	if err != nil {
		return nil, "", err
	}
	defer db.Close()
	var k, version string
	if err := db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_version'").Scan(&k, &version); err != nil {
		return nil, "", err
	}
	mu.Lock()
	defer mu.Unlock()
	return peer, version, nil
}

// replicationOverTLS reports whether replica m replicates with TLS that verifies its source.
func replicationOverTLS(ctx context.Context, m, operatorPassword string, caPEM []byte) (bool, error) {
	p, err := lc.CP.Kube.CoreV1().Pods(ns).Get(ctx, m, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	cfg, err := certs.ClientTLS(caPEM, fmt.Sprintf("%s.%s-headless.%s.svc", m, name, ns))
	if err != nil {
		return false, err
	}
	db, err := pkgmysql.Open(pkgmysql.ConnConfig{Addr: net.JoinHostPort(p.Status.PodIP, "3306"), User: pkgmysql.OperatorUser, Password: operatorPassword, Timeout: 3 * time.Second, TLS: cfg})
	if err != nil {
		return false, err
	}
	defer db.Close()
	st, err := (&pkgmysql.Instance{DB: db, Flavor: pkgmysql.MariaDB}).Status(ctx)
	if err != nil {
		return false, err
	}
	return st.Replica != nil && st.Replica.TLS && st.Replica.IORunning, nil
}

// tlsJourney: TLS is on by default. Applications verify the members with the published CA
// bundle; the replicas replicate over verified TLS; the operator reports the certificate; and a
// rotation (the Secret deleted, as docs/tls.md says to rotate at once) under a live writer is
// served by every mysqld without a restart and loses no acknowledged write.
func tlsJourney(t *testing.T, primary string) {
	ctx := context.Background()
	c := cluster(t)
	if c.Status.TLS == nil || c.Status.TLS.ServerNotAfter == nil || !condTrue(c.Status.Conditions, v1alpha1.ConditionCertificatesReady) {
		t.Fatalf("status.tls %+v, conditions %+v", c.Status.TLS, c.Status.Conditions)
	}
	for _, in := range c.Status.Instances {
		if !in.TLS {
			t.Errorf("member %s does not serve TLS", in.Name)
		}
	}
	caPEM := secretData(t, name+"-ca")[resources.SecretKeyCA]
	operatorPassword := string(secretData(t, name+"-credentials")[resources.SecretKeyOperatorPassword])
	before := secretData(t, name+"-tls")[corev1.TLSCertKey]
	for _, m := range members(3) {
		peer, version, err := tlsSession(ctx, m, "app", appPassword, caPEM)
		if err != nil || version == "" || !bytes.Equal(peer.Raw, mustCert(t, before).Raw) {
			t.Fatalf("%s: TLS session verified by the CA bundle: %v (version %q)", m, err, version)
		}
		if m == primary {
			continue
		}
		eventually(t, time.Minute, m+" replicating over verified TLS", func(ctx context.Context) (bool, error) {
			return replicationOverTLS(ctx, m, operatorPassword, caPEM)
		})
	}
	other, err := pki.NewCA("not the cluster's", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tlsSession(ctx, primary, "app", appPassword, other.CertPEM); err == nil {
		t.Fatal("a client trusting another CA connected")
	}

	pids := map[string]int{}
	for _, m := range members(3) {
		pid, err := lc.PID(pod(t, m), resources.ContainerMySQL)
		if err != nil {
			t.Fatal(err)
		}
		pids[m] = pid
	}
	w := localcluster.StartWriter(memberDB, statusPrimary)
	time.Sleep(2 * time.Second)
	rotated := time.Now()
	if err := lc.CP.Kube.CoreV1().Secrets(ns).Delete(ctx, name+"-tls", metav1.DeleteOptions{}); err != nil {
		w.Stop()
		t.Fatal(err)
	}
	var after []byte
	eventually(t, time.Minute, "a new certificate in Secret "+name+"-tls", func(ctx context.Context) (bool, error) {
		s, err := lc.CP.Kube.CoreV1().Secrets(ns).Get(ctx, name+"-tls", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		after = s.Data[corev1.TLSCertKey]
		return !bytes.Equal(after, before), nil
	})
	want := mustCert(t, after)
	served := map[string]time.Duration{}
	eventually(t, 2*time.Minute, "every member serving the new certificate", func(ctx context.Context) (bool, error) {
		for _, m := range members(3) {
			if _, ok := served[m]; ok {
				continue
			}
			if peer, _, err := tlsSession(ctx, m, "app", appPassword, caPEM); err == nil && bytes.Equal(peer.Raw, want.Raw) {
				served[m] = time.Since(rotated)
			}
		}
		return len(served) == 3, nil
	})
	time.Sleep(2 * time.Second)
	acked := w.Stop()
	gap := w.MaxGap(rotated, time.Now())
	t.Logf("rotation: new certificate served by every member after %v (%v); longest pause between acknowledged writes %v; %d writes acknowledged",
		maxDuration(served).Round(time.Millisecond), served, gap.Round(time.Millisecond), len(acked))
	for _, m := range members(3) {
		pid, err := lc.PID(pod(t, m), resources.ContainerMySQL)
		if err != nil || pid != pids[m] {
			t.Errorf("%s: mysqld restarted for the rotation (pid %d -> %d, %v)", m, pids[m], pid, err)
		}
	}
	if lost := missing(t, primary, acked); len(lost) > 0 {
		t.Fatalf("%d acknowledged writes lost during the rotation, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	for _, m := range otherThan(members(3), primary) {
		eventually(t, time.Minute, m+" replicating over verified TLS after the rotation", func(ctx context.Context) (bool, error) {
			return replicationOverTLS(ctx, m, operatorPassword, caPEM)
		})
	}
}

func mustCert(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	c, err := pki.ParseCertificate(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func maxDuration(m map[string]time.Duration) time.Duration {
	var out time.Duration
	for _, d := range m {
		out = max(out, d)
	}
	return out
}
