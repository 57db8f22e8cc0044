package pki

import (
	"net"
	"strings"
	"testing"
	"time"
)

func mustCA(t *testing.T, now time.Time) *KeyPair {
	t.Helper()
	ca, err := NewCA("test CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestIssueVerifiesForItsNamesOnly(t *testing.T) {
	now := time.Now()
	ca := mustCA(t, now)
	kp, err := Issue(ca, Request{CommonName: "db", DNSNames: []string{"*.db-headless.ns.svc", "db-primary.ns.svc"}, Lifetime: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	for name, ok := range map[string]bool{"db-0.db-headless.ns.svc": true, "db-primary.ns.svc": true, "db-0.other.ns.svc": false, "db-replicas.ns.svc": false} {
		err := Verify(kp.CertPEM, ca.CertPEM, name, now)
		if (err == nil) != ok {
			t.Errorf("Verify(%s) = %v, want ok=%v", name, err, ok)
		}
	}
	other := mustCA(t, now)
	if err := Verify(kp.CertPEM, other.CertPEM, "db-primary.ns.svc", now); err == nil {
		t.Error("a certificate verified under a CA that did not sign it")
	}
	if err := Verify(kp.CertPEM, ca.CertPEM, "db-primary.ns.svc", now.Add(2*time.Hour)); err == nil {
		t.Error("an expired certificate verified")
	}
	back, err := ParseKeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatalf("ParseKeyPair of an issued pair: %v", err)
	}
	if !SameCertificate(back.CertPEM, kp.CertPEM) {
		t.Error("the parsed pair holds another certificate")
	}
	if _, err := ParseKeyPair(kp.CertPEM, ca.KeyPEM); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("ParseKeyPair with another key = %v, want a mismatch", err)
	}
}

func TestIssueNeverOutlivesItsCA(t *testing.T) {
	now := time.Now()
	ca := mustCA(t, now)
	kp, err := Issue(ca, Request{CommonName: "x", DNSNames: []string{"x"}, Lifetime: 48 * time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !kp.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("NotAfter = %s, want the CA's %s", kp.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

func TestRenewal(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca := mustCA(t, now)
	req := Request{CommonName: "db", DNSNames: []string{"a", "b"}, Lifetime: 3 * time.Hour}
	kp, err := Issue(ca, req, now)
	if err != nil {
		t.Fatal(err)
	}
	other := mustCA(t, now)
	// The lifetime runs from now-backdate to now+3h: two thirds of it.
	renewAt := RenewAt(kp.Cert.NotBefore, kp.Cert.NotAfter)
	for _, tc := range []struct {
		name string
		cert []byte
		ca   *KeyPair
		req  Request
		at   time.Time
		want string // a part of the reason; "" for none
	}{
		{"fresh", kp.CertPEM, ca, req, now, ""},
		{"names in another order", kp.CertPEM, ca, Request{DNSNames: []string{"b", "a"}}, now, ""},
		{"just before two thirds", kp.CertPEM, ca, req, renewAt.Add(-time.Second), ""},
		{"at two thirds", kp.CertPEM, ca, req, renewAt, "two thirds"},
		{"missing", nil, ca, req, now, "no certificate"},
		{"garbage", []byte("x"), ca, req, now, "cannot be read"},
		{"another CA", kp.CertPEM, other, req, now, "not signed by the current CA"},
		{"a name added", kp.CertPEM, ca, Request{DNSNames: []string{"a", "b", "c"}}, now, "names"},
		{"an address added", kp.CertPEM, ca, Request{DNSNames: []string{"a", "b"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}, now, "addresses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Renewal(tc.cert, tc.ca.Cert, tc.req, tc.at)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("Renewal = %q, want %q", got, tc.want)
			}
		})
	}
}
