package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Flavor is the server family a cluster runs.
// +kubebuilder:validation:Enum=mysql;mariadb
type Flavor string

const (
	// FlavorMySQL is Oracle MySQL 8.0 / 8.4.
	FlavorMySQL Flavor = "mysql"
	// FlavorMariaDB is MariaDB 10.6+ / 11.x.
	FlavorMariaDB Flavor = "mariadb"
)

// ReplicationMode says how the primary waits for replicas before it acknowledges a commit.
// +kubebuilder:validation:Enum=semisync;async
type ReplicationMode string

const (
	// ReplicationSemiSync is loss-less semi-synchronous replication: a commit is acknowledged
	// only after a replica has received it.
	ReplicationSemiSync ReplicationMode = "semisync"
	// ReplicationAsync is plain asynchronous replication.
	ReplicationAsync ReplicationMode = "async"
)

// ClusterPhase is the one-word summary of a cluster in status.phase.
type ClusterPhase string

const (
	// ClusterPending means the children exist or are being created and no member is ready yet.
	ClusterPending ClusterPhase = "Pending"
	// ClusterBootstrapping means the first primary is being set up.
	ClusterBootstrapping ClusterPhase = "Bootstrapping"
	// ClusterHealthy means every member is ready and up to date.
	ClusterHealthy ClusterPhase = "Healthy"
	// ClusterDegraded means some, but not all, members are ready.
	ClusterDegraded ClusterPhase = "Degraded"
	// ClusterUpgrading means members are being restarted one at a time onto a new pod template.
	ClusterUpgrading ClusterPhase = "Upgrading"
	// ClusterFailingOver means the primary is being replaced.
	ClusterFailingOver ClusterPhase = "FailingOver"
	// ClusterLost means no member can serve.
	ClusterLost ClusterPhase = "Lost"
	// ClusterInvalid means the spec cannot be acted on; the Accepted condition says why.
	ClusterInvalid ClusterPhase = "Invalid"
	// ClusterFenced means writes are stopped on purpose while a MySQLRestore runs: the
	// primary is read-only and out of the primary Service, and nothing fails over.
	ClusterFenced ClusterPhase = "Fenced"
)

// Instance roles, the values of the mysqlop.io/role label.
const (
	// RolePrimary is the writable member.
	RolePrimary = "primary"
	// RoleReplica is a read-only member replicating from the primary.
	RoleReplica = "replica"
)

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=myc,categories=mysqlop
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.members,statuspath=.status.readyMembers,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.spec.members`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.primary`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Recoverable-From",type=string,JSONPath=`.status.recoverableFrom`,priority=1
// +kubebuilder:printcolumn:name="Recoverable-Until",type=string,JSONPath=`.status.recoverableUntil`,priority=1
// +kubebuilder:printcolumn:name="Operator",type=string,JSONPath=`.status.operatorVersion`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:selectablefield:JSONPath=`.status.phase`
// +kubebuilder:selectablefield:JSONPath=`.status.operatorVersion`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]{0,50}[a-z0-9])?$')",message="metadata.name must be at most 52 lower-case letters, digits and '-', starting with a letter: the StatefulSet of that name labels its pods <name>-<revision hash> (at most 63) and the Services are named after it"

// MySQLCluster is a highly available MySQL or MariaDB cluster: one primary and replicas
// replicating with GTIDs, fronted by a read-write and a read-only Service.
type MySQLCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired cluster.
	Spec MySQLClusterSpec `json:"spec"`
	// Status is what the operator last observed.
	// +optional
	Status MySQLClusterStatus `json:"status,omitempty"`
}

// MySQLClusterSpec is the desired state of a MySQLCluster.
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap) && (!has(self.bootstrap) || self.bootstrap == oldSelf.bootstrap)",message="bootstrap can only be set when the cluster is created"
type MySQLClusterSpec struct {
	// Members is the number of MySQL instances (one primary, the rest replicas).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +kubebuilder:default=3
	// +optional
	Members int32 `json:"members,omitempty"`

	// Flavor is the server family. It cannot be changed after creation.
	// +kubebuilder:default=mysql
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="flavor is immutable"
	// +optional
	Flavor Flavor `json:"flavor,omitempty"`

	// Version is the server version (semver, e.g. 8.4.3 or 10.11.6); it is also the image tag.
	// Empty means the operator's default for the flavor. Downgrades are refused.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`
	// +optional
	Version string `json:"version,omitempty"`

	// Image overrides the image repository (without tag) for the server; the tag is Version.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullSecrets are passed to every pod of the cluster.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// RootPasswordSecretRef names a Secret key holding the root password. When unset the
	// operator generates one into the cluster's internal credentials Secret.
	// +optional
	RootPasswordSecretRef *SecretKeyRef `json:"rootPasswordSecretRef,omitempty"`

	// Replication configures how replicas follow the primary.
	// +kubebuilder:default={}
	// +optional
	Replication ReplicationSpec `json:"replication,omitempty"`

	// Config holds extra [mysqld] settings for my.cnf. Keys the operator manages (server_id,
	// GTID and binary log settings, read_only, paths, ports, ...) are rejected.
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z0-9_.-]{1,128}$'))",message="config keys must be 1-128 characters of letters, digits, '_', '-' or '.'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.lowerAscii().replace('-', '_').matches('^((skip|disable|enable|loose|maximum)_)*(bind_address|datadir|enforce_gtid_consistency|gtid_domain_id|gtid_mode|gtid_strict_mode|init_rpl_role|log_bin|log_replica_updates|log_slave_updates|pid_file|plugin_load_add|port|read_only|relay_log|report_host|report_port|rpl_semi_sync_master_enabled|rpl_semi_sync_replica_enabled|rpl_semi_sync_slave_enabled|rpl_semi_sync_slave_kill_conn_timeout|rpl_semi_sync_source_enabled|secure_file_priv|server_id|skip_replica_start|skip_slave_start|socket|super_read_only|tmpdir)$'))",message="config sets an option the operator manages (also through the prefixes skip_, disable_, enable_, loose_ and maximum_); these are rejected: bind_address, datadir, GTID settings (gtid_*, enforce_gtid_consistency), init_rpl_role, binary and relay log settings (log_bin, relay_log, log_*_updates), pid_file, plugin_load_add, port, read_only, super_read_only, report_host, report_port, semi-sync enable switches and rpl_semi_sync_slave_kill_conn_timeout, secure_file_priv, server_id, skip_*_start, socket, tmpdir"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.lowerAscii().replace('-', '_').matches('^((skip|disable|enable|loose|maximum)_)*(b(i(n(d(_(a(d(d(r(e(s)?)?)?)?)?)?)?)?)?)?|d(a(t(a(d(i)?)?)?)?)?|e(n(f(o(r(c(e(_(g(t(i(d(_(c(o(n(s(i(s(t(e(n(c)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?|g(t(i(d(_(d(o(m(a(i(n(_(i)?)?)?)?)?)?)?|m(o(d)?)?|s(t(r(i(c(t(_(m(o(d)?)?)?)?)?)?)?)?)?)?)?)?)?)?|i(n(i(t(_(r(p(l(_(r(o(l)?)?)?)?)?)?)?)?)?)?)?|l(o(g(_(b(i)?|r(e(p(l(i(c(a(_(u(p(d(a(t(e)?)?)?)?)?)?)?)?)?)?)?)?)?|s(l(a(v(e(_(u(p(d(a(t(e)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?|p(i(d(_(f(i(l)?)?)?)?)?|l(u(g(i(n(_(l(o(a(d(_(a(d)?)?)?)?)?)?)?)?)?)?)?)?|o(r)?)?|r(e(a(d(_(o(n(l)?)?)?)?)?|l(a(y(_(l(o)?)?)?)?)?|p(o(r(t(_(h(o(s)?)?|p(o(r)?)?)?)?)?)?)?)?|p(l(_(s(e(m(i(_(s(y(n(c(_(m(a(s(t(e(r(_(e(n(a(b(l(e)?)?)?)?)?)?)?)?)?)?)?)?|r(e(p(l(i(c(a(_(e(n(a(b(l(e)?)?)?)?)?)?)?)?)?)?)?)?)?|s(l(a(v(e(_(e(n(a(b(l(e)?)?)?)?)?|k(i(l(l(_(c(o(n(n(_(t(i(m(e(o(u)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?|o(u(r(c(e(_(e(n(a(b(l(e)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?|s(e(c(u(r(e(_(f(i(l(e(_(p(r(i)?)?)?)?)?)?)?)?)?)?)?)?|r(v(e(r(_(i)?)?)?)?)?)?|k(i(p(_(r(e(p(l(i(c(a(_(s(t(a(r)?)?)?)?)?)?)?)?)?)?)?|s(l(a(v(e(_(s(t(a(r)?)?)?)?)?)?)?)?)?)?)?)?)?|o(c(k(e)?)?)?|u(p(e(r(_(r(e(a(d(_(o(n(l)?)?)?)?)?)?)?)?)?)?)?)?)?|t(m(p(d(i)?)?)?)?)$') || k.lowerAscii().replace('-', '_').matches('^((skip|disable|enable|loose|maximum)_)*plugin_load$'))",message="config abbreviates an option the operator manages: the servers read an unambiguous beginning of an option name as the option (read_onl sets read_only); write option names in full"
	// +optional
	Config map[string]ConfigValue `json:"config,omitempty"`

	// VolumeClaimTemplate is the spec of each member's data volume. Storage defaults to 10Gi.
	// It is fixed at creation, like a StatefulSet's claim templates; grow volumes by editing
	// their PersistentVolumeClaims.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeClaimTemplate is immutable; resize the PersistentVolumeClaims instead"
	// +optional
	VolumeClaimTemplate *corev1.PersistentVolumeClaimSpec `json:"volumeClaimTemplate,omitempty"`

	// Resources of the server container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector for the cluster's pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Affinity for the cluster's pods. When unset, members prefer distinct nodes.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Tolerations for the cluster's pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// PodLabels are added to every pod; they cannot override the operator's own labels.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('mysqlop.io/') && !k.startsWith('app.kubernetes.io/'))",message="podLabels may not use the reserved prefixes mysqlop.io/ and app.kubernetes.io/"
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are added to every pod.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// PriorityClassName for the cluster's pods.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// BaseServerID is added to a member's ordinal to form its server_id. Give clusters that
	// replicate with each other distinct ranges.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967286
	// +kubebuilder:default=100
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="baseServerId is immutable"
	// +optional
	BaseServerID int64 `json:"baseServerId,omitempty"`
	// Bootstrap fills a new cluster from a backup once it has a primary. It can only be set
	// when the cluster is created.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
	// BinlogArchive archives the primary's binary logs continuously to object storage, for
	// point-in-time recovery (MySQLRestore spec.target).
	// +optional
	BinlogArchive *BinlogArchiveSpec `json:"binlogArchive,omitempty"`
	// TLS encrypts client, replication and operator connections to the servers. It is on
	// unless disabled, with certificates the operator issues from a CA of its own.
	// +optional
	TLS TLSSpec `json:"tls,omitempty"`
}

// TLSSpec says where the servers' certificates come from. With neither caSecretRef nor
// certManager, the operator keeps a CA of its own in the Secret <cluster>-ca-key.
// +kubebuilder:validation:XValidation:rule="!(has(self.caSecretRef) && has(self.certManager))",message="caSecretRef and certManager are exclusive: name one source of certificates"
// +kubebuilder:validation:XValidation:rule="!(has(self.disabled) && self.disabled) || !(has(self.caSecretRef) || has(self.certManager) || (has(self.requireSecureTransport) && self.requireSecureTransport))",message="disabled excludes caSecretRef, certManager and requireSecureTransport"
// +kubebuilder:validation:XValidation:rule="!has(self.certificateDuration) || duration(self.certificateDuration) >= duration('1h')",message="certificateDuration must be at least 1h"
type TLSSpec struct {
	// Disabled serves and replicates without TLS. Changing it restarts the members.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// CASecretRef names a Secret of type kubernetes.io/tls (tls.crt, tls.key) holding a CA of
	// the user's; the operator issues the servers' certificates from it.
	// +optional
	CASecretRef *LocalReference `json:"caSecretRef,omitempty"`
	// CertManager has cert-manager issue the servers' certificate: the operator creates a
	// Certificate <cluster>-tls. cert-manager's CRDs must be installed.
	// +optional
	CertManager *CertManagerTLS `json:"certManager,omitempty"`
	// RequireSecureTransport refuses TCP connections without TLS (require_secure_transport);
	// the members' Unix socket stays open to the operator's agent and tools.
	// +optional
	RequireSecureTransport bool `json:"requireSecureTransport,omitempty"`
	// CertificateDuration is the lifetime of the server certificate; it is renewed after two
	// thirds of it. Default 2160h (90 days); at least 1h.
	// +optional
	CertificateDuration *metav1.Duration `json:"certificateDuration,omitempty"`
}

// CertManagerTLS names the cert-manager issuer of a cluster's server certificate.
type CertManagerTLS struct {
	// IssuerRef is the Issuer (in the cluster's namespace) or ClusterIssuer that signs.
	IssuerRef IssuerReference `json:"issuerRef"`
}

// IssuerReference names a cert-manager issuer.
type IssuerReference struct {
	// Name of the issuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Kind is Issuer (default) or ClusterIssuer.
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// Group is the issuer's API group; default cert-manager.io (external issuers have their own).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
}

// BootstrapSpec says where a new cluster's data comes from.
type BootstrapSpec struct {
	// FromBackup is a MySQLBackup (logical or physical) in the cluster's namespace; it is
	// restored once, through a MySQLRestore named <cluster>-bootstrap.
	FromBackup LocalReference `json:"fromBackup"`
	// Target brings the new cluster to a point after the backup by replaying the backup's
	// cluster's archived binary logs (see MySQLRestore spec.target).
	// +optional
	Target *RestoreTarget `json:"target,omitempty"`
}

// SecretKeyRef names one key of a Secret in the object's namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the Secret's data.
	// +kubebuilder:default=password
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// ReplicationSpec configures replication inside a cluster.
type ReplicationSpec struct {
	// Mode is semisync (loss-less, the default) or async.
	// +kubebuilder:default=semisync
	// +optional
	Mode ReplicationMode `json:"mode,omitempty"`
	// Reseed says which diverged members the operator re-seeds (replaces their data with a
	// copy of a healthy peer) without a person: FailedPrimaries (the default) re-seeds a
	// former primary that a failover replaced and that then diverged (what it holds beyond
	// its replacement is its unacknowledged tail, which no client was told committed);
	// Diverged also re-seeds replicas that diverged for other reasons, discarding their own
	// transactions; Never leaves every diverged member to a person.
	// +kubebuilder:default=FailedPrimaries
	// +optional
	Reseed ReseedPolicy `json:"reseed,omitempty"`
}

// ReseedPolicy says which diverged members are re-seeded automatically.
// +kubebuilder:validation:Enum=FailedPrimaries;Diverged;Never
type ReseedPolicy string

// Re-seed policies.
const (
	ReseedFailedPrimaries ReseedPolicy = "FailedPrimaries"
	ReseedDiverged        ReseedPolicy = "Diverged"
	ReseedNever           ReseedPolicy = "Never"
)

// MySQLClusterStatus is the observed state of a MySQLCluster.
type MySQLClusterStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase summarises the cluster.
	// +optional
	Phase ClusterPhase `json:"phase,omitempty"`
	// ReadyMembers counts members whose pods are ready.
	// +optional
	ReadyMembers int32 `json:"readyMembers"`
	// Selector is the label selector of the cluster's pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// Primary is the name of the pod that is the primary.
	// +optional
	Primary string `json:"primary,omitempty"`
	// Epoch counts the changes of primary (failovers and switchovers). With Primary it is the
	// durable record a restarted operator resumes from.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// Replaced lists former primaries that a failover replaced and that have not followed a
	// primary since: they are never promoted again until they do, and are re-seeded when they
	// diverged (spec.replication.reseed).
	// +listType=set
	// +optional
	Replaced []string `json:"replaced,omitempty"`
	// Instances lists every member.
	// +listType=map
	// +listMapKey=name
	// +optional
	Instances []InstanceStatus `json:"instances,omitempty"`
	// Conditions are Ready, Accepted and Synced (and the clustering conditions).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// OperatorVersion is the operator build that last reconciled the cluster.
	// +optional
	OperatorVersion string `json:"operatorVersion,omitempty"`
	// CurrentVersion is the server version every member runs; during an upgrade it is the old one.
	// +optional
	CurrentVersion string `json:"currentVersion,omitempty"`
	// BinlogArchive is what the primary's archiver reports, while spec.binlogArchive is set.
	// +optional
	BinlogArchive *BinlogArchiveStatus `json:"binlogArchive,omitempty"`
	// RecoverableFrom and RecoverableUntil bound the times a point-in-time restore of the
	// cluster can reach: from the oldest Complete backup the archive continues, to the last
	// archived transaction. Unset without an archive or such a backup.
	// +optional
	RecoverableFrom *metav1.Time `json:"recoverableFrom,omitempty"`
	// +optional
	RecoverableUntil *metav1.Time `json:"recoverableUntil,omitempty"`
	// TLS describes the certificates the members serve, while TLS is on.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`
}

// TLSStatus is the state of a cluster's certificates.
type TLSStatus struct {
	// Source is where the certificates come from: Operator, CASecret or CertManager.
	Source string `json:"source,omitempty"`
	// CANotAfter is when the CA expires.
	// +optional
	CANotAfter *metav1.Time `json:"caNotAfter,omitempty"`
	// ServerNotAfter is when the server certificate expires.
	// +optional
	ServerNotAfter *metav1.Time `json:"serverNotAfter,omitempty"`
	// RenewalTime is when the operator (or cert-manager) renews the server certificate.
	// +optional
	RenewalTime *metav1.Time `json:"renewalTime,omitempty"`
}

// BinlogArchiveSpec says where and how often the primary's binary logs are archived. The
// cluster, not a schedule, names it: archiving follows whichever member is primary, with or
// without scheduled backups.
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || duration(self.interval) >= duration('1s')",message="interval must be at least 1s"
type BinlogArchiveSpec struct {
	// Storage is where the binary logs go, under <prefix>/<namespace>/<cluster>/binlog/. Its
	// credentials Secret must be labelled mysqlop.io/storage-credentials=true.
	Storage BackupStorage `json:"storage"`
	// Interval bounds how long a committed transaction waits before it is archived (the
	// recovery point objective, plus one upload): the current binary log is closed and
	// archived once its oldest unarchived transaction is older. Default 1m.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// BinlogArchiveStatus is the archive as the primary's agent last reported it.
type BinlogArchiveStatus struct {
	// Member is the member that archives (the primary).
	Member string `json:"member,omitempty"`
	// End is the GTID position the archive holds.
	End string `json:"end,omitempty"`
	// LastArchiveTime is when the last file was archived.
	// +optional
	LastArchiveTime *metav1.Time `json:"lastArchiveTime,omitempty"`
	// LagSeconds is the age of the oldest transaction not archived yet; LagBytes the size of
	// the binary logs that hold such transactions.
	LagSeconds int64 `json:"lagSeconds"`
	LagBytes   int64 `json:"lagBytes"`
}

// InstanceStatus is the observed state of one member.
type InstanceStatus struct {
	// Name of the member's pod.
	Name string `json:"name"`
	// Role is primary or replica, when known.
	// +optional
	Role string `json:"role,omitempty"`
	// Ready is whether the pod is ready.
	Ready bool `json:"ready"`
	// Version is the server version the member's pod runs.
	// +optional
	Version string `json:"version,omitempty"`
	// GTIDExecuted is the member's executed GTID set, when known.
	// +optional
	GTIDExecuted string `json:"gtidExecuted,omitempty"`
	// LagSeconds is the replica's replication delay, when known.
	// +optional
	LagSeconds *int64 `json:"lagSeconds,omitempty"`
	// TLS is whether the member serves TLS with the cluster's certificate (its pod was
	// started with TLS on); the operator then connects to it only over verified TLS.
	// +optional
	TLS bool `json:"tls,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MySQLClusterList is a list of MySQLClusters.
type MySQLClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the clusters.
	Items []MySQLCluster `json:"items"`
}

// ConfigValue is the value of a my.cnf option: one line, as the option-file reader splits a
// longer line and reads its rest as a line of its own (another option, an !include).
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:Pattern=`^[^\r\n]*$`
type ConfigValue string
