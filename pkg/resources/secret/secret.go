// Package secret builds the internal credentials Secret of a cluster.
//
// Passwords are generated once with crypto/rand and never regenerated: a key already present
// in the existing Secret keeps its value, so a reconcile can never lock the operator or the
// replicas out. The values are never logged; callers only ever see key names. The Secret also
// holds the agents' TLS serving certificate and key, generated as a pair.
package secret

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// passwordLength is long enough for 190 bits of entropy from a 62-letter alphabet.
const passwordLength = 32

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// Keys returns the password keys the credentials Secret of c must hold. The root password is
// among them only when the user did not reference a Secret of their own.
func Keys(c *v1alpha1.MySQLCluster) []string {
	keys := []string{resources.SecretKeyReplicationPassword, resources.SecretKeyOperatorPassword, resources.SecretKeyAgentToken}
	if c.Spec.RootPasswordSecretRef == nil {
		keys = append([]string{resources.SecretKeyRootPassword}, keys...)
	}
	return keys
}

// tlsKeys are the certificate and key, which only ever change together.
var tlsKeys = []string{resources.SecretKeyAgentTLSCert, resources.SecretKeyAgentTLSKey}

// New returns the desired credentials Secret of c. Values in existing (which may be nil) are
// kept; missing keys get fresh passwords read from rand (crypto/rand.Reader in production).
func New(c *v1alpha1.MySQLCluster, existing map[string][]byte, operatorVersion string, rand io.Reader) (*corev1.Secret, error) {
	data := maps.Clone(existing)
	if data == nil {
		data = map[string][]byte{}
	}
	for _, k := range Keys(c) {
		if len(data[k]) > 0 {
			continue
		}
		p, err := Password(rand)
		if err != nil {
			return nil, fmt.Errorf("generate %s: %w", k, err)
		}
		data[k] = p
	}
	if len(data[resources.SecretKeyAgentTLSCert]) == 0 || len(data[resources.SecretKeyAgentTLSKey]) == 0 {
		cert, key, err := AgentCertificate(time.Now())
		if err != nil {
			return nil, fmt.Errorf("generate the agent certificate: %w", err)
		}
		data[resources.SecretKeyAgentTLSCert], data[resources.SecretKeyAgentTLSKey] = cert, key
	}
	return &corev1.Secret{
		ObjectMeta: resources.ObjectMeta(c, resources.CredentialsSecretName(c), operatorVersion),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}, nil
}

// Password returns a random password of letters and digits, read from rand without modulo bias.
func Password(rand io.Reader) ([]byte, error) {
	out := make([]byte, 0, passwordLength)
	buf := make([]byte, 64)
	for len(out) < passwordLength {
		if _, err := io.ReadFull(rand, buf); err != nil {
			return nil, fmt.Errorf("read random bytes: %w", err)
		}
		for _, b := range buf {
			// 248 = 4*62: bytes at or above it would favour the first letters.
			if b < 248 && len(out) < passwordLength {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return out, nil
}

// Missing reports the keys of Keys(c) that existing lacks, and both TLS keys when either is
// missing.
func Missing(c *v1alpha1.MySQLCluster, existing map[string][]byte) []string {
	var missing []string
	for _, k := range Keys(c) {
		if len(existing[k]) == 0 {
			missing = append(missing, k)
		}
	}
	for _, k := range tlsKeys {
		if len(existing[k]) == 0 {
			return append(missing, tlsKeys...)
		}
	}
	return missing
}

// certificateLifetime is long because nothing rotates the certificate yet; clients pin it, so
// no other party's certificate is ever trusted in its place.
const certificateLifetime = 10 * 365 * 24 * time.Hour

// AgentCertificate returns a new self-signed ECDSA P-256 serving certificate for
// agentapi.ServerName and its private key, both PEM. The key comes from crypto/rand.
func AgentCertificate(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := crand.Int(crand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: agentapi.ServerName},
		DNSNames:              []string{agentapi.ServerName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certificateLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(crand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// NotControlledError reports a Secret with the credentials Secret's name that the cluster
// does not control: someone else made it, so its passwords, token and certificate were not
// chosen by the operator and are never used.
type NotControlledError struct{ Name string }

func (e *NotControlledError) Error() string {
	return fmt.Sprintf("Secret %s is not controlled by its MySQLCluster: its credentials are not used", e.Name)
}

// Get returns the credentials Secret of c from lister: a NotFound error while there is none,
// a *NotControlledError when c does not control the one there is.
func Get(lister corelisters.SecretLister, c *v1alpha1.MySQLCluster) (*corev1.Secret, error) {
	name := resources.CredentialsSecretName(c)
	s, err := lister.Secrets(c.Namespace).Get(name)
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(s, c) {
		return nil, &NotControlledError{Name: name}
	}
	return s, nil
}
