package v1alpha1

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
)

// OperatorOwnedConfigKeys are my.cnf [mysqld] keys the operator sets itself; spec.config may
// not set them (compared lower-case with '-' read as '_'). The CRD's CEL rule carries the same
// list; a test keeps the two equal.
var OperatorOwnedConfigKeys = []string{
	"bind_address", "datadir", "enforce_gtid_consistency", "gtid_domain_id", "gtid_mode",
	"gtid_strict_mode", "init_rpl_role", "log_bin", "log_replica_updates", "log_slave_updates", "pid_file", "plugin_load_add",
	"port", "read_only", "relay_log", "report_host", "report_port",
	"rpl_semi_sync_master_enabled", "rpl_semi_sync_replica_enabled", "rpl_semi_sync_slave_enabled",
	"rpl_semi_sync_slave_kill_conn_timeout", "rpl_semi_sync_source_enabled", "secure_file_priv", "server_id", "skip_replica_start", "skip_slave_start",
	"socket", "super_read_only", "tmpdir",
}

// ReservedLabelPrefixes are label key prefixes the operator owns on its pods.
var ReservedLabelPrefixes = []string{"mysqlop.io/", "app.kubernetes.io/"}

// MaxServerID is the largest server_id MySQL accepts.
const MaxServerID = 4294967295

var configKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// clusterNamePattern bounds a MySQLCluster's name by what its children need: the StatefulSet
// controller labels pods with <name>-<10-character revision hash>, at most 63 characters, and
// Service names are DNS-1035 labels.
var clusterNamePattern = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,50}[a-z0-9])?$`)

// ValidClusterName reports whether name is a name a MySQLCluster may have (its CRD's rule).
func ValidClusterName(name string) bool { return clusterNamePattern.MatchString(name) }

// NormalizeConfigKey returns the canonical form of a my.cnf option name.
func NormalizeConfigKey(k string) string {
	return strings.ReplaceAll(strings.ToLower(k), "-", "_")
}

// OptionPrefixes are the prefixes the servers' option readers strip from an option name
// (skip_read_only sets read_only; loose_ only hides an unknown option's error).
var OptionPrefixes = []string{"skip_", "disable_", "enable_", "loose_", "maximum_"}

// ConfigOption returns the option a my.cnf key sets: normalized, prefixes stripped.
func ConfigOption(k string) string {
	k = NormalizeConfigKey(k)
	for {
		trimmed := k
		for _, p := range OptionPrefixes {
			trimmed = strings.TrimPrefix(trimmed, p)
		}
		if trimmed == k {
			return k
		}
		k = trimmed
	}
}

// ExactOptionsAbbreviatingOwned are server options whose full names are also strict prefixes
// of an operator-owned key: written in full they set themselves, not the owned option.
// (Found by listing every option `mariadbd --verbose --help` knows.)
var ExactOptionsAbbreviatingOwned = []string{"plugin_load"}

// ManagedOption returns the operator-owned option that the my.cnf key k sets, or "". The
// servers' option readers strip the prefixes of OptionPrefixes and then take any unambiguous
// prefix of an option name as that option (MariaDB 10.11: read_onl=ON sets read_only, and
// skip-read-onl turns it off), so k sets an owned option when, at any stage of stripping, it
// is that option's name or a prefix of it.
func ManagedOption(k string) string {
	k = NormalizeConfigKey(k)
	for {
		if !slices.Contains(ExactOptionsAbbreviatingOwned, k) {
			for _, o := range OperatorOwnedConfigKeys {
				if strings.HasPrefix(o, k) {
					return o
				}
			}
		}
		trimmed := k
		for _, p := range OptionPrefixes {
			trimmed = strings.TrimPrefix(trimmed, p)
		}
		if trimmed == k {
			return ""
		}
		k = trimmed
	}
}

// OwnedAbbreviationsPattern is the regular expression of the CRD's rule against abbreviated
// owned options: a normalized key that, behind any OptionPrefixes, is a strict prefix of an
// owned key (full names are the other rule's). It is built from a trie of the owned keys, so
// shared beginnings (rpl_semi_sync_...) are spelled once; a test keeps the CRD's copy equal.
func OwnedAbbreviationsPattern() string {
	type node map[byte]node
	root := node{}
	for _, o := range OperatorOwnedConfigKeys {
		n := root
		for i := 0; i < len(o); i++ {
			if n[o[i]] == nil {
				n[o[i]] = node{}
			}
			n = n[o[i]]
		}
	}
	// alt spells the non-empty strict prefixes below n: a child that ends a key and has no
	// children of its own is a full key only.
	var alt func(n node) string
	alt = func(n node) string {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(n)) {
			if len(n[c]) == 0 {
				continue
			}
			part := string(c)
			if rest := alt(n[c]); rest != "" {
				part += "(" + rest + ")?"
			}
			parts = append(parts, part)
		}
		return strings.Join(parts, "|")
	}
	words := make([]string, len(OptionPrefixes))
	for i, p := range OptionPrefixes {
		words[i] = strings.TrimSuffix(p, "_")
	}
	return "^((" + strings.Join(words, "|") + ")_)*(" + alt(root) + ")$"
}

// MaxConfigValue bounds a spec.config value: the option-file reader splits a longer line, and
// its rest would be read as a line of its own (another option, an !include).
const MaxConfigValue = 1024

// ValidateCluster checks a defaulted MySQLCluster spec. It repeats the CRD's rules so that a
// spec that reached the controller some other way is refused with the same meaning.
func ValidateCluster(c *MySQLCluster) field.ErrorList {
	var errs field.ErrorList
	s := &c.Spec
	p := field.NewPath("spec")
	if !ValidClusterName(c.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, "must be at most 52 lower-case letters, digits and '-', starting with a letter"))
	}
	if s.Members < 1 || s.Members > 9 {
		errs = append(errs, field.Invalid(p.Child("members"), s.Members, "must be between 1 and 9"))
	}
	switch s.Flavor {
	case FlavorMySQL, FlavorMariaDB:
	default:
		errs = append(errs, field.NotSupported(p.Child("flavor"), s.Flavor, []Flavor{FlavorMySQL, FlavorMariaDB}))
	}
	if _, err := version.ParseSemantic(s.Version); err != nil {
		errs = append(errs, field.Invalid(p.Child("version"), s.Version, "must be a semantic version such as 8.4.3"))
	}
	switch s.Replication.Mode {
	case ReplicationSemiSync, ReplicationAsync:
	default:
		errs = append(errs, field.NotSupported(p.Child("replication", "mode"), s.Replication.Mode,
			[]ReplicationMode{ReplicationSemiSync, ReplicationAsync}))
	}
	if a := s.BinlogArchive; a != nil && a.Interval != nil && a.Interval.Duration < time.Second {
		errs = append(errs, field.Invalid(p.Child("binlogArchive", "interval"), a.Interval.Duration.String(), "must be at least 1s"))
	}
	for _, k := range sortedKeys(s.Config) {
		kp := p.Child("config").Key(k)
		switch {
		case !configKeyPattern.MatchString(k):
			errs = append(errs, field.Invalid(kp, k, "must be 1-128 characters of letters, digits, '_', '-' or '.'"))
		case ManagedOption(k) != "":
			errs = append(errs, field.Forbidden(kp, "sets "+ManagedOption(k)+", which the operator manages (the servers read a prefix of an option name as the option: write names in full)"))
		case strings.ContainsAny(string(s.Config[k]), "\n\r"):
			errs = append(errs, field.Invalid(kp, "", "value must be a single line"))
		case len(s.Config[k]) > MaxConfigValue:
			errs = append(errs, field.TooLong(kp, "", MaxConfigValue))
		}
	}
	for _, k := range sortedKeys(s.PodLabels) {
		for _, prefix := range ReservedLabelPrefixes {
			if strings.HasPrefix(k, prefix) {
				errs = append(errs, field.Forbidden(p.Child("podLabels").Key(k), "prefix "+prefix+" is reserved for the operator"))
			}
		}
	}
	if s.BaseServerID < 1 || s.BaseServerID+int64(s.Members) > MaxServerID {
		errs = append(errs, field.Invalid(p.Child("baseServerId"), s.BaseServerID,
			fmt.Sprintf("must be at least 1 and leave room for %d members below %d", s.Members, int64(MaxServerID))))
	}
	if r := s.RootPasswordSecretRef; r != nil && r.Name == "" {
		errs = append(errs, field.Required(p.Child("rootPasswordSecretRef", "name"), ""))
	}
	return errs
}

// IsDowngrade reports whether moving from version from to version to goes backwards.
func IsDowngrade(from, to string) (bool, error) {
	f, err := version.ParseSemantic(from)
	if err != nil {
		return false, fmt.Errorf("parse current version %q: %w", from, err)
	}
	t, err := version.ParseSemantic(to)
	if err != nil {
		return false, fmt.Errorf("parse desired version %q: %w", to, err)
	}
	return t.LessThan(f), nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
