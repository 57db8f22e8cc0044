package v1alpha1

// This file is the one place for the keys and reasons users see: labels, annotations,
// finalizers, condition types and condition reasons. They are part of the API (users select,
// alert and script on them), so they are stable: add new ones, never rename one.

// Labels. The operator puts the app.kubernetes.io ones and mysqlop.io/cluster on every child
// and selects its informers on app.kubernetes.io/managed-by.
const (
	// LabelCluster on a child (and on each member pod) names its MySQLCluster.
	LabelCluster = "mysqlop.io/cluster"
	// LabelRole on a member pod is RolePrimary or RoleReplica; the Services select on it.
	LabelRole = "mysqlop.io/role"
	// LabelOperatorVersion on a child is the operator build that last wrote it.
	LabelOperatorVersion = "mysqlop.io/operator-version"
	// LabelSchedule on a MySQLBackup names the MySQLBackupSchedule that created it.
	LabelSchedule = "mysqlop.io/backup-schedule"
	// LabelStorageCredentials, set to "true" on a Secret, lets MySQLBackups (and so restores and
	// schedules) in its namespace name it as storage credentials. Without it the operator never
	// reads the Secret's keys, so a user who may create MySQLBackups cannot send any Secret of the
	// namespace to an endpoint of their choosing.
	LabelStorageCredentials = "mysqlop.io/storage-credentials"
	// LabelName is app.kubernetes.io/name (value AppName) on every child.
	LabelName = "app.kubernetes.io/name"
	// LabelInstance is app.kubernetes.io/instance (the cluster's name) on every child.
	LabelInstance = "app.kubernetes.io/instance"
	// LabelManagedBy is app.kubernetes.io/managed-by (value ManagedBy) on every child.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelComponent is app.kubernetes.io/component (value ComponentDatabase) on every child.
	LabelComponent = "app.kubernetes.io/component"
)

// Fixed label values.
const (
	// ManagedBy is the app.kubernetes.io/managed-by value on every child; informers filter on it.
	ManagedBy = "mysql-operator"
	// AppName is the app.kubernetes.io/name value on every child.
	AppName = "mysql"
	// ComponentDatabase is the app.kubernetes.io/component value on every child.
	ComponentDatabase = "database"
)

// Annotations users set.
const (
	// AnnotationSwitchoverTo on a MySQLCluster requests a switchover to the named member pod.
	// The operator removes it once that member is the primary.
	AnnotationSwitchoverTo = "mysqlop.io/switchover-to"
	// AnnotationReseed on a MySQLCluster asks to re-seed the named member pod: its data is
	// deleted and replaced with a copy of a healthy peer (kubectl mysqlop reseed sets it after
	// a confirmation). Never the primary; one member at a time while every other is
	// reachable. The operator removes it once the re-seed started, or refuses it with an event.
	AnnotationReseed = "mysqlop.io/reseed"
)

// Annotations the operator sets.
const (
	// AnnotationSpecHash on a child is the hash of the spec the operator last wrote; a child is
	// rewritten only when the desired hash differs, so server-side defaulting never causes writes.
	AnnotationSpecHash = "mysqlop.io/spec-hash"
	// AnnotationRestartHash on a pod template (and so on each pod) is the hash of everything in
	// the template that needs mysqld to restart; agent-only changes leave it alone.
	AnnotationRestartHash = "mysqlop.io/restart-hash"
	// AnnotationConfigHash on a pod template is the hash of the my.cnf ConfigMap data.
	AnnotationConfigHash = "mysqlop.io/config-hash"
	// AnnotationTLS on a pod template (and so on each pod) is "true" when the server serves TLS
	// with the cluster's certificate: the operator then connects to it, and replicates
	// between two such members, over TLS that verifies the certificate.
	AnnotationTLS = "mysqlop.io/tls"
	// AnnotationVersion on a pod template (and so on each pod) is the server version it runs.
	AnnotationVersion = "mysqlop.io/version"
	// AnnotationRestore on a MySQLCluster names the running MySQLRestore that stopped its
	// writes (the fence). It is honoured only while that restore exists and runs: the cluster
	// controller removes it otherwise.
	AnnotationRestore = "mysqlop.io/restore"
	// AnnotationDataRestored on a MySQLCluster names the physical MySQLRestore (name/uid) that
	// last replaced every member's data, accounts included: controllers that remember what
	// they set in the database (MySQLUser passwords) set it again when it changes.
	AnnotationDataRestored = "mysqlop.io/data-restored"
	// AnnotationBootstrapRestore on a MySQLCluster names the MySQLRestore its spec.bootstrap
	// was turned into; once set, no second one is made, even if that restore is deleted.
	AnnotationBootstrapRestore = "mysqlop.io/bootstrap-restore"
	// AnnotationArchiveTimeline on a MySQLCluster is set when a restore replaced its data in
	// place (the completion time, 20060102T150405Z): its history no longer continues the
	// archived binary logs, so archiving starts a new chain under binlog/<timeline>/, and only
	// backups finished after it are bases for a point-in-time restore.
	AnnotationArchiveTimeline = "mysqlop.io/archive-timeline"
)

// Finalizers.
const (
	// FinalizerUser drops the account (per deletionPolicy) before a MySQLUser goes away.
	FinalizerUser = "mysqlop.io/user"
	// FinalizerDatabase drops the schema (per deletionPolicy) before a MySQLDatabase goes away.
	FinalizerDatabase = "mysqlop.io/database"
	// FinalizerBackup deletes the stored object of a MySQLBackup with deletionPolicy Delete.
	FinalizerBackup = "mysqlop.io/backup"
	// FinalizerRestore holds a running MySQLRestore until, deleted, it has discarded what it
	// staged and lifted its fence; it is removed when the restore ends.
	FinalizerRestore = "mysqlop.io/restore-cleanup"
	// LegacyFinalizerRestore is what earlier builds used for FinalizerRestore (the same string
	// as AnnotationRestore); the operator removes it from restores that still carry it.
	LegacyFinalizerRestore = "mysqlop.io/restore"
)

// Condition types.
const (
	// ConditionReady, on a MySQLCluster, is True when every member is ready and runs the
	// desired pod template; on a MySQLUser or MySQLDatabase, when the server matches the spec.
	ConditionReady = "Ready"
	// ConditionAccepted is False when the spec (or the change it asks for, such as a version
	// downgrade) is refused; the reason and message say why.
	ConditionAccepted = "Accepted"
	// ConditionSynced is False when a child object could not be brought to the desired state
	// (for example a same-named object owned by someone else).
	ConditionSynced = "Synced"
	// ConditionHealthy is True when the clustering manager finds one writable primary and every
	// replica replicating from it; its reason is the clustering state.
	ConditionHealthy = "Healthy"
	// ConditionDegraded is True when the primary serves but something is wrong (a member down,
	// broken, errant or not yet set up), or while failing over, or when the cluster is lost.
	ConditionDegraded = "Degraded"
	// ConditionArchiving, on a MySQLCluster with spec.binlogArchive, is True while the primary
	// archives its binary logs within twice the interval; False (with the reason) otherwise.
	ConditionArchiving = "Archiving"
	// ConditionCertificatesReady, on a MySQLCluster with TLS on, is True while the server
	// certificate is issued and not close to expiry; False (with the reason) otherwise.
	ConditionCertificatesReady = "CertificatesReady"
	// ConditionComplete, on a backup or a restore, is True when the work finished successfully,
	// False when it failed (its message says why), Unknown while it waits or runs.
	ConditionComplete = "Complete"
)

// Condition reasons of a MySQLCluster (Healthy and Degraded take the clustering state).
const (
	// ReasonAccepted: the spec was accepted.
	ReasonAccepted = "Accepted"
	// ReasonInvalidSpec: the spec cannot be acted on; nothing changes until it is fixed.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonDowngradeRefused: spec.version is older than the running version.
	ReasonDowngradeRefused = "DowngradeRefused"
	// ReasonSynced: every child matches the spec.
	ReasonSynced = "Synced"
	// ReasonSyncFailed: creating or updating a child failed (retried with back-off).
	ReasonSyncFailed = "SyncFailed"
	// ReasonErrResourceExists: a child's name is taken by an object the cluster does not control.
	ReasonErrResourceExists = "ErrResourceExists"
	// ReasonSecretNotFound: a Secret the object names, or its key, is missing (on a MySQLUser
	// too: its password Secret).
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonMembersReady: every member is ready and up to date.
	ReasonMembersReady = "MembersReady"
	// ReasonMembersNotReady: some members are not ready.
	ReasonMembersNotReady = "MembersNotReady"
	// ReasonRollingRestart: members are being restarted onto a new pod template.
	ReasonRollingRestart = "RollingRestart"
)

// Archiving condition reasons of a MySQLCluster.
const (
	// ReasonArchiving: the primary archives within twice the interval.
	ReasonArchiving = "Archiving"
	// ReasonArchiveLagging: the oldest unarchived transaction is older than twice the interval.
	ReasonArchiveLagging = "ArchiveLagging"
	// ReasonArchiveFailed: the archiver, or configuring it, failed; the message says why.
	ReasonArchiveFailed = "ArchiveFailed"
	// ReasonArchiveGap: an archived file does not continue the chain: a recovery cannot cross it.
	ReasonArchiveGap = "ArchiveGap"
	// ReasonArchivePending: no report from the primary's archiver yet.
	ReasonArchivePending = "ArchivePending"
)

// CertificatesReady condition reasons of a MySQLCluster.
const (
	// ReasonCertificatesIssued: the server certificate is issued and valid.
	ReasonCertificatesIssued = "CertificatesIssued"
	// ReasonCertificatePending: the server certificate is not issued yet (cert-manager has not
	// written it).
	ReasonCertificatePending = "CertificatePending"
	// ReasonCASecretInvalid: spec.tls.caSecretRef names a Secret that is missing or holds no
	// usable CA.
	ReasonCASecretInvalid = "CASecretInvalid"
	// ReasonCertManagerMissing: spec.tls.certManager is set but cert-manager's CRDs are not
	// installed.
	ReasonCertManagerMissing = "CertManagerMissing"
	// ReasonCertificateExpiring: the certificate the members serve expires within a tenth of its
	// lifetime and was not renewed.
	ReasonCertificateExpiring = "CertificateExpiring"
)

// TLS sources of a MySQLCluster (status.tls.source).
const (
	TLSSourceOperator    = "Operator"
	TLSSourceCASecret    = "CASecret"
	TLSSourceCertManager = "CertManager"
)

// Ready condition reasons of a MySQLUser or MySQLDatabase.
const (
	// ReasonReconciled: the object in the database matches the spec.
	ReasonReconciled = "Reconciled"
	// ReasonSQLError: the server refused a statement; its message says why. Retried with backoff.
	ReasonSQLError = "SQLError"
	// ReasonDeleting: the object waits to be dropped from the database.
	ReasonDeleting = "Deleting"
	// ReasonConflict: another object of the cluster manages the same account or schema.
	ReasonConflict = "Conflict"
	// ReasonAccountExists: the account exists and was not created by the operator.
	ReasonAccountExists = "AccountExists"
	// ReasonSchemaExists: the schema exists and was not created by the operator.
	ReasonSchemaExists = "SchemaExists"
	// ReasonClusterNotFound: the referenced MySQLCluster does not exist.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonClusterNotReady: the cluster has no primary yet, or its primary is not writable.
	ReasonClusterNotReady = "ClusterNotReady"
	// ReasonClusterUnreachable: the primary did not answer; retried with backoff.
	ReasonClusterUnreachable = "ClusterUnreachable"
)

// Complete condition reasons of a MySQLBackup or MySQLRestore, and Ready reasons of a
// MySQLBackupSchedule.
const (
	// ReasonWaiting: the job waits for what it needs; the message names it.
	ReasonWaiting = "Waiting"
	// ReasonRunning: the job runs; the message says which step.
	ReasonRunning = "Running"
	// ReasonCompleted: the job finished.
	ReasonCompleted = "Completed"
	// ReasonFailed: the job failed and is not retried; the message says why.
	ReasonFailed = "Failed"
	// ReasonTargetUnreachable: a point-in-time restore's target lies outside what the backups
	// and the binary log archive cover; the message names the recoverable window.
	ReasonTargetUnreachable = "TargetUnreachable"
	// ReasonChecksumMismatch: a verification restore found tables whose checksums differ
	// between the backup restored and the earlier backup brought to its position by the
	// archive; status.verification.mismatched names them.
	ReasonChecksumMismatch = "ChecksumMismatch"
	// ReasonScheduled: the schedule creates backups.
	ReasonScheduled = "Scheduled"
	// ReasonInvalidSchedule: the schedule's cron expression cannot be parsed.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonSuspended: the schedule is suspended.
	ReasonSuspended = "Suspended"
)
