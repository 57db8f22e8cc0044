// Package secret builds the internal credentials Secret of a cluster.
//
// Passwords are generated once with crypto/rand and never regenerated: a key already present
// in the existing Secret keeps its value, so a reconcile can never lock the operator or the
// replicas out. The values are never logged; callers only ever see key names.
package secret

import (
	"fmt"
	"io"
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// passwordLength is long enough for 190 bits of entropy from a 62-letter alphabet.
const passwordLength = 32

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// Keys returns the keys the credentials Secret of c must hold. The root password is among
// them only when the user did not reference a Secret of their own.
func Keys(c *v1alpha1.MySQLCluster) []string {
	keys := []string{resources.SecretKeyReplicationPassword, resources.SecretKeyOperatorPassword, resources.SecretKeyAgentToken}
	if c.Spec.RootPasswordSecretRef == nil {
		keys = append([]string{resources.SecretKeyRootPassword}, keys...)
	}
	return keys
}

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

// Missing reports the keys of Keys(c) that existing lacks.
func Missing(c *v1alpha1.MySQLCluster, existing map[string][]byte) []string {
	var missing []string
	for _, k := range Keys(c) {
		if len(existing[k]) == 0 {
			missing = append(missing, k)
		}
	}
	return missing
}
