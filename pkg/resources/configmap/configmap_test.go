package configmap

import (
	"strings"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

func lines(s string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, " = "); ok {
			out[k] = v
		}
	}
	return out
}

func TestRenderFlavors(t *testing.T) {
	for _, tc := range []struct {
		flavor v1alpha1.Flavor
		want   map[string]string
		absent []string
	}{
		{v1alpha1.FlavorMySQL, map[string]string{"gtid_mode": "ON", "enforce_gtid_consistency": "ON", "super_read_only": "ON", "read_only": "ON", "log_replica_updates": "ON"}, []string{"gtid_strict_mode"}},
		{v1alpha1.FlavorMariaDB, map[string]string{"gtid_strict_mode": "ON", "read_only": "ON", "log_slave_updates": "ON", "bind_address": "0.0.0.0"}, []string{"gtid_mode", "super_read_only", "plugin_load_add"}},
	} {
		t.Run(string(tc.flavor), func(t *testing.T) {
			got := lines(Render(testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Flavor = tc.flavor })))
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s must not be set for %s", k, tc.flavor)
				}
			}
			if got["datadir"] != DataDir || got["socket"] != SocketPath {
				t.Errorf("paths: datadir=%q socket=%q", got["datadir"], got["socket"])
			}
		})
	}
}

func TestRenderTLS(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  v1alpha1.TLSSpec
		want map[string]string
	}{
		{"default", v1alpha1.TLSSpec{}, map[string]string{"ssl_cert": TLSCertFile, "ssl_key": TLSKeyFile, "ssl_ca": TLSCAFile, "require_secure_transport": ""}},
		{"required", v1alpha1.TLSSpec{RequireSecureTransport: true}, map[string]string{"ssl_cert": TLSCertFile, "require_secure_transport": "ON"}},
		{"disabled", v1alpha1.TLSSpec{Disabled: true}, map[string]string{"ssl_cert": "", "ssl_key": "", "ssl_ca": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lines(Render(testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.TLS = tc.tls })))
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestRenderUserConfigOverridesDefaultsNotOwned(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) {
		// read-only would be refused by validation; Render must still never let it through.
		c.Spec.Config = map[string]v1alpha1.ConfigValue{"max-connections": "42", "innodb_buffer_pool_size": "1G", "read-only": "OFF"}
	})
	got := lines(Render(c))
	if got["max_connections"] != "42" || got["innodb_buffer_pool_size"] != "1G" {
		t.Errorf("user settings missing: %v", got)
	}
	if got["read_only"] != "ON" {
		t.Errorf("read_only = %q: an owned key was overridden", got["read_only"])
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Config = map[string]v1alpha1.ConfigValue{"a": "1", "b": "2", "c": "3", "d": "4"}
	})
	first := Render(c)
	for range 20 {
		if Render(c) != first {
			t.Fatal("Render output changes between calls")
		}
	}
}

func TestHoldsDataIsOutsideTheRestartHash(t *testing.T) {
	c := testutil.Cluster("ns", "db")
	fresh, holding := New(c, "v1", false), New(c, "v1", true)
	if HoldsData(fresh) || !HoldsData(holding) || HoldsData(nil) {
		t.Errorf("HoldsData: fresh %v, holding %v, nil %v", HoldsData(fresh), HoldsData(holding), HoldsData(nil))
	}
	if Hash(fresh) != Hash(holding) {
		t.Error("recording that the cluster holds data changes the restart hash: every member would restart")
	}
	// The hash of my.cnf alone is the one earlier versions took of the whole data, so an
	// operator upgrade restarts nothing.
	if Hash(fresh) != resources.Hash(fresh.Data) {
		t.Error("Hash differs from the hash of the data earlier versions took")
	}
	// Init reads the key as a file beside my.cnf under the agent's name for it.
	if KeyHoldsData != agentapi.FileHoldsData {
		t.Errorf("ConfigMap key %q, agent file %q", KeyHoldsData, agentapi.FileHoldsData)
	}
}
