package secret

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

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
