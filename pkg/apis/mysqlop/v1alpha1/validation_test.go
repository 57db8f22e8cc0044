package v1alpha1

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func valid() *MySQLCluster {
	c := &MySQLCluster{}
	c.Name = "db"
	SetClusterDefaults(c)
	return c
}

func TestDefaults(t *testing.T) {
	c := valid()
	if c.Spec.Members != 3 || c.Spec.Flavor != FlavorMySQL || c.Spec.Version != DefaultVersions[FlavorMySQL] ||
		c.Spec.Replication.Mode != ReplicationSemiSync || c.Spec.BaseServerID != 100 {
		t.Errorf("defaults: %+v", c.Spec)
	}
	m := &MySQLCluster{Spec: MySQLClusterSpec{Flavor: FlavorMariaDB, RootPasswordSecretRef: &SecretKeyRef{Name: "s"}}}
	SetClusterDefaults(m)
	if m.Spec.Version != DefaultVersions[FlavorMariaDB] || m.Spec.RootPasswordSecretRef.Key != DefaultSecretKey {
		t.Errorf("mariadb defaults: %+v", m.Spec)
	}
}

func TestValidateCluster(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*MySQLCluster)
		field  string // "" means valid
	}{
		{"defaults", func(*MySQLCluster) {}, ""},
		{"members 0", func(c *MySQLCluster) { c.Spec.Members = 0 }, "spec.members"},
		{"members 10", func(c *MySQLCluster) { c.Spec.Members = 10 }, "spec.members"},
		{"members 9", func(c *MySQLCluster) { c.Spec.Members = 9 }, ""},
		{"name of 52", func(c *MySQLCluster) { c.Name = "a" + strings.Repeat("b", 51) }, ""},
		{"name of 53", func(c *MySQLCluster) { c.Name = "a" + strings.Repeat("b", 52) }, "metadata.name"},
		{"name starting with a digit", func(c *MySQLCluster) { c.Name = "1db" }, "metadata.name"},
		{"flavor", func(c *MySQLCluster) { c.Spec.Flavor = "postgres" }, "spec.flavor"},
		{"version", func(c *MySQLCluster) { c.Spec.Version = "8.4" }, "spec.version"},
		{"prerelease version", func(c *MySQLCluster) { c.Spec.Version = "11.4.0-rc1" }, ""},
		{"mode", func(c *MySQLCluster) { c.Spec.Replication.Mode = "sync" }, "spec.replication.mode"},
		{"owned key", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"server-id": "1"} }, "spec.config[server-id]"},
		{"owned key case", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"Read_Only": "0"} }, "spec.config[Read_Only]"},
		{"free key", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"innodb-buffer-pool-size": "1G"} }, ""},
		{"bad key", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"a b": "1"} }, "spec.config[a b]"},
		{"multi-line value", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"a": "1\n[client]"} }, "spec.config[a]"},
		{"skip- prefix", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"skip-read-only": "ON"} }, "spec.config[skip-read-only]"},
		{"skip_ prefix", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"skip_log_slave_updates": ""} }, "spec.config[skip_log_slave_updates]"},
		{"loose and disable prefixes", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"LOOSE-disable-log-bin": "1"} }, "spec.config[LOOSE-disable-log-bin]"},
		{"maximum_ prefix", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"maximum_secure_file_priv": "/"} }, "spec.config[maximum_secure_file_priv]"},
		{"abbreviated owned key", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"read_onl": "OFF"} }, "spec.config[read_onl]"},
		{"abbreviation behind skip-", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"skip-read-o": ""} }, "spec.config[skip-read-o]"},
		{"owned key that starts with skip_", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"skip_slave_start": "0"} }, "spec.config[skip_slave_start]"},
		{"plugin_load is an option of its own", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"plugin-load": "x.so"} }, ""},
		{"a longer option that begins with an owned one", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"log_bin_trust_function_creators": "1"} }, ""},
		{"loose free key", func(c *MySQLCluster) { c.Spec.Config = map[string]ConfigValue{"loose_innodb_buffer_pool_size": "1G"} }, ""},
		{"long value", func(c *MySQLCluster) {
			c.Spec.Config = map[string]ConfigValue{"init_connect": ConfigValue(strings.Repeat("x", 1025))}
		}, "spec.config[init_connect]"},
		{"reserved label", func(c *MySQLCluster) { c.Spec.PodLabels = map[string]string{"mysqlop.io/role": "primary"} }, "spec.podLabels[mysqlop.io/role]"},
		{"server id range", func(c *MySQLCluster) { c.Spec.BaseServerID = MaxServerID }, "spec.baseServerId"},
		{"root ref name", func(c *MySQLCluster) { c.Spec.RootPasswordSecretRef = &SecretKeyRef{Key: "k"} }, "spec.rootPasswordSecretRef.name"},
		{"archive interval under 1s", func(c *MySQLCluster) {
			c.Spec.BinlogArchive = &BinlogArchiveSpec{Interval: &metav1.Duration{Duration: 500 * time.Millisecond}}
		}, "spec.binlogArchive.interval"},
		{"archive interval of 1s", func(c *MySQLCluster) {
			c.Spec.BinlogArchive = &BinlogArchiveSpec{Interval: &metav1.Duration{Duration: time.Second}}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mutate(c)
			errs := ValidateCluster(c)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.field {
				t.Fatalf("want one error on %s, got %v", tc.field, errs)
			}
		})
	}
}

func TestIsDowngrade(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{"8.0.36", "8.4.3", false},
		{"8.4.3", "8.0.36", true},
		{"10.11.6", "10.11.6", false},
		{"10.11.10", "10.11.9", true},
		{"11.4.0-rc1", "11.4.0", false},
		{"11.4.0", "11.4.0-rc1", true},
	} {
		got, err := IsDowngrade(tc.from, tc.to)
		if err != nil || got != tc.want {
			t.Errorf("IsDowngrade(%s, %s) = %v, %v; want %v", tc.from, tc.to, got, err, tc.want)
		}
	}
	if _, err := IsDowngrade("x", "8.0.1"); err == nil {
		t.Error("want an error for an unparsable version")
	}
}

// The CRD's CEL rule and ValidateCluster must refuse the same keys.
func TestCRDOwnedKeysMatchGo(t *testing.T) {
	b, err := os.ReadFile("../../../../contrib/manifests/crds/mysqlop.io_mysqlclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`rule: self\.all\(k, !k\.lowerAscii\(\)\.replace\('-', '_'\)\.matches\('\^\(\(skip\|disable\|enable\|loose\|maximum\)_\)\*\(([^)]*)\)\$'\)\)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("owned-keys rule not found in the MySQLCluster CRD")
	}
	crd := strings.Split(string(m[1]), "|")
	want := slices.Sorted(slices.Values(OperatorOwnedConfigKeys))
	if !slices.Equal(slices.Sorted(slices.Values(crd)), want) {
		t.Errorf("CRD rule keys %v\ndiffer from OperatorOwnedConfigKeys %v", crd, want)
	}
}

// The CRD's abbreviation rule is the generated pattern, and it refuses exactly what
// ManagedOption finds behind an abbreviation: every strict prefix of every owned key, behind
// any prefix words, and none of a sample of free options.
func TestCRDAbbreviationRuleMatchesGo(t *testing.T) {
	b, err := os.ReadFile("../../../../contrib/manifests/crds/mysqlop.io_mysqlclusters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pattern := OwnedAbbreviationsPattern()
	if !strings.Contains(string(b), "!k.lowerAscii().replace('-', '_').matches('"+pattern+"')") {
		t.Fatal("the MySQLCluster CRD does not carry OwnedAbbreviationsPattern(): copy it into the marker on Config and regenerate")
	}
	re := regexp.MustCompile(pattern)
	// The two rules of the CRD, as regular expressions.
	full := regexp.MustCompile(`^((skip|disable|enable|loose|maximum)_)*(` + strings.Join(OperatorOwnedConfigKeys, "|") + `)$`)
	exception := regexp.MustCompile(`^((skip|disable|enable|loose|maximum)_)*plugin_load$`)
	crdRefuses := func(k string) bool {
		n := NormalizeConfigKey(k)
		return full.MatchString(n) || (re.MatchString(n) && !exception.MatchString(n))
	}
	var keys []string
	for _, o := range OperatorOwnedConfigKeys {
		for i := 1; i <= len(o); i++ {
			keys = append(keys, o[:i], "skip_"+o[:i], "loose-disable-"+o[:i], strings.ToUpper(o[:i]))
		}
	}
	keys = append(keys, "plugin_load", "loose_plugin_load", "innodb_buffer_pool_size", "max_connections",
		"log_bin_trust_function_creators", "relay_log_recovery", "read_buffer_size", "binlog_format",
		"skip_name_resolve", "server_audit_logging", "tmp_table_size", "gtid_pos_auto_engines", "slave_parallel_threads")
	for _, k := range keys {
		if got, want := crdRefuses(k), ManagedOption(k) != ""; got != want {
			t.Errorf("%q: CRD refuses %v, ManagedOption refuses %v (%q)", k, got, want, ManagedOption(k))
		}
	}
}
