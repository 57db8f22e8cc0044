// Package pki issues and inspects the certificates of a cluster's TLS: a CA, and server
// certificates signed by it. It is pure crypto over PEM bytes; where the bytes are kept
// (Secrets) is the caller's business.
//
// Keys are ECDSA P-256 from crypto/rand. A server certificate is renewed once two thirds of its
// lifetime have passed, when it no longer names what it must, or when it was not signed by the
// current CA.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// backdate covers clocks that run a little behind the issuer's.
const backdate = 5 * time.Minute

// KeyPair is a certificate and its private key.
type KeyPair struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM and KeyPEM are the encoded forms.
	CertPEM, KeyPEM []byte
}

// NewCA returns a self-signed CA named commonName, valid from now for lifetime.
func NewCA(commonName string, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	tpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"mysqlop"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return issue(tpl, nil)
}

// Request says what a server certificate names.
type Request struct {
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	// Lifetime is how long the certificate is valid from now.
	Lifetime time.Duration
}

// Issue returns a server (and client) certificate for r signed by ca.
func Issue(ca *KeyPair, r Request, now time.Time) (*KeyPair, error) {
	tpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: r.CommonName, Organization: []string{"mysqlop"}},
		DNSNames:    r.DNSNames,
		IPAddresses: r.IPs,
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.Add(r.Lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		// Client auth too: the same certificate identifies a member to its source.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if ca.Cert.NotAfter.Before(tpl.NotAfter) {
		// A certificate outliving its CA would fail verification early anyway; say when.
		tpl.NotAfter = ca.Cert.NotAfter
	}
	return issue(tpl, ca)
}

func issue(tpl *x509.Certificate, parent *KeyPair) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	if tpl.SerialNumber, err = crand.Int(crand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	signerCert, signerKey := tpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(crand.Reader, tpl, signerCert, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("sign certificate %q: %w", tpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{
		Cert: cert, Key: key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// ParseKeyPair decodes a certificate (the first of certPEM) and its private key, and checks
// that they belong together.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("the private key is not PEM")
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("parse the private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("the private key cannot sign")
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, errors.New("the private key does not match the certificate")
	}
	return &KeyPair{Cert: cert, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ParseCertificate decodes the first certificate of a PEM bundle.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return cert, nil
}

// RenewAt is when a certificate valid from notBefore to notAfter is renewed: at two thirds of
// its lifetime, which leaves a third for the renewal to reach every member.
func RenewAt(notBefore, notAfter time.Time) time.Time {
	return notBefore.Add(notAfter.Sub(notBefore) * 2 / 3)
}

// Renewal says why a server certificate must be issued again ("" when it need not).
func Renewal(certPEM []byte, ca *x509.Certificate, r Request, now time.Time) string {
	if len(certPEM) == 0 {
		return "there is no certificate yet"
	}
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return "the certificate cannot be read"
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return "the certificate was not signed by the current CA"
	}
	if !now.Before(RenewAt(cert.NotBefore, cert.NotAfter)) {
		return fmt.Sprintf("two thirds of its lifetime have passed (it expires at %s)", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	want := slices.Clone(r.DNSNames)
	have := slices.Clone(cert.DNSNames)
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(want, have) {
		return "the names it must hold changed"
	}
	if !slices.EqualFunc(r.IPs, cert.IPAddresses, func(a, b net.IP) bool { return a.Equal(b) }) {
		return "the addresses it must hold changed"
	}
	return ""
}

// Verify checks that certPEM is valid for serverName at now under the CAs of caPEM.
func Verify(certPEM, caPEM []byte, serverName string, now time.Time) error {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("the CA bundle holds no PEM certificate")
	}
	_, err = cert.Verify(x509.VerifyOptions{DNSName: serverName, Roots: pool, CurrentTime: now})
	return err
}

// SameCertificate reports whether two PEM bundles start with the same certificate.
func SameCertificate(a, b []byte) bool {
	x, err1 := ParseCertificate(a)
	y, err2 := ParseCertificate(b)
	return err1 == nil && err2 == nil && bytes.Equal(x.Raw, y.Raw)
}
