package v1alpha1

// Default values. The CRD schema applies the static ones at admission; the controller applies
// them again (to a copy) so that objects from any source, and the per-flavor version, are handled.
const (
	DefaultMembers      int32 = 3
	DefaultBaseServerID int64 = 100
	DefaultSecretKey          = "password"
)

// DefaultVersions is the server version used when spec.version is empty.
var DefaultVersions = map[Flavor]string{
	FlavorMySQL:   "8.4.3",
	FlavorMariaDB: "10.11.6",
}

// SetClusterDefaults fills unset fields of c. Call it on a copy, never on a cached object.
func SetClusterDefaults(c *MySQLCluster) {
	s := &c.Spec
	if s.Members == 0 {
		s.Members = DefaultMembers
	}
	if s.Flavor == "" {
		s.Flavor = FlavorMySQL
	}
	if s.Version == "" {
		s.Version = DefaultVersions[s.Flavor]
	}
	if s.Replication.Mode == "" {
		s.Replication.Mode = ReplicationSemiSync
	}
	if s.BaseServerID == 0 {
		s.BaseServerID = DefaultBaseServerID
	}
	if s.RootPasswordSecretRef != nil && s.RootPasswordSecretRef.Key == "" {
		s.RootPasswordSecretRef.Key = DefaultSecretKey
	}
}
