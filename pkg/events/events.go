// Package events is the catalogue of event reasons the operator emits. Reasons are part of the
// operator's interface (users alert on them), so they are stable: add new ones, never rename.
package events

// Reasons for Warning events.
const (
	// ErrResourceExists: a child object of the expected name exists but is not controlled by
	// the cluster; the operator leaves it alone.
	ErrResourceExists = "ErrResourceExists"
	// InvalidSpec: the spec cannot be acted on; nothing is changed until it is fixed.
	InvalidSpec = "InvalidSpec"
	// DowngradeRefused: spec.version is older than the running version; the running version is kept.
	DowngradeRefused = "DowngradeRefused"
	// SyncFailed: writing a child object failed; the operator retries with backoff.
	SyncFailed = "SyncFailed"
	// FailOver: the primary was down and a replica was promoted.
	FailOver = "FailOver"
	// ErrantReplica: a replica has transactions the primary does not have; it is out of service.
	ErrantReplica = "ErrantReplica"
	// FencedWritable: an instance besides the primary was writable and was made read-only.
	FencedWritable = "FencedWritable"
	// ClusteringFailed: a clustering operation failed; the next round retries it.
	ClusteringFailed = "ClusteringFailed"
	// SecretNotFound: a MySQLUser's password Secret or key is missing; no account is created
	// or changed until it exists. On a MySQLCluster: the Secret its rootPasswordSecretRef
	// names, or its key, is missing; the members cannot start until it exists.
	SecretNotFound = "SecretNotFound"
	// SQLFailed: the server refused an account or schema statement; retried with backoff.
	SQLFailed = "SQLFailed"
	// ClusterNotReady: the referenced cluster cannot take account or schema changes yet.
	ClusterNotReady = "ClusterNotReady"
	// BackupFailed: a backup failed; its Complete condition says why. It is not retried.
	BackupFailed = "BackupFailed"
	// RestoreFailed: a restore failed; its Complete condition says why. It is not retried.
	RestoreFailed = "RestoreFailed"
	// MemberReseeded: a member diverged from the primary (spec.replication.reseed allows it)
	// and is re-seeded: its data is replaced with a copy of a healthy peer.
	MemberReseeded = "MemberReseeded"
)

// Reasons for Normal events.
const (
	// Created: a child object was created.
	Created = "Created"
	// Updated: a child object was changed to match the spec.
	Updated = "Updated"
	// MemberRestarted: a member's pod was deleted so that it restarts on the new pod template.
	MemberRestarted = "MemberRestarted"
	// AgentUpdated: a member's agent container was moved to the operator's agent image in place.
	AgentUpdated = "AgentUpdated"
	// VersionUpgraded: every member runs the new server version.
	VersionUpgraded = "VersionUpgraded"
	// SwitchOver: the primary role moved to another member on request or for a restart.
	SwitchOver = "SwitchOver"
	// UserCreated: a MySQLUser's account was created.
	UserCreated = "UserCreated"
	// PasswordRotated: a MySQLUser's password was set from a changed Secret.
	PasswordRotated = "PasswordRotated"
	// UserUpdated: a MySQLUser's grants or limits were changed to match the spec.
	UserUpdated = "UserUpdated"
	// UserDropped: a deleted MySQLUser's account was dropped (deletionPolicy Delete).
	UserDropped = "UserDropped"
	// DatabaseCreated: a MySQLDatabase's schema was created.
	DatabaseCreated = "DatabaseCreated"
	// DatabaseUpdated: a MySQLDatabase's character set or collation was changed.
	DatabaseUpdated = "DatabaseUpdated"
	// DatabaseDropped: a deleted MySQLDatabase's schema was dropped (deletionPolicy Delete).
	DatabaseDropped = "DatabaseDropped"
	// BackupWaiting: a backup waits for its cluster, a ready member or its storage Secret.
	BackupWaiting = "BackupWaiting"
	// BackupStarted: a member's agent took a backup.
	BackupStarted = "BackupStarted"
	// BackupCompleted: a backup is stored.
	BackupCompleted = "BackupCompleted"
	// RestoreStarted: a restore started: the primary loads a logical backup, or every member
	// stages a physical one.
	RestoreStarted = "RestoreStarted"
	// RestoreCompleted: a backup was restored into the cluster.
	RestoreCompleted = "RestoreCompleted"
	// RestoreWaiting: a restore waits for its backup, its cluster or the storage Secret.
	RestoreWaiting = "RestoreWaiting"
	// WritesStopped: a cluster's primary was made read-only because a restore runs.
	WritesStopped = "WritesStopped"
	// WritesResumed: the restore that stopped a cluster's writes ended; the primary takes
	// writes again.
	WritesResumed = "WritesResumed"
	// BackupScheduled: a schedule created a backup.
	BackupScheduled = "BackupScheduled"
	// BackupSkipped: a scheduled backup was skipped because one still ran (Forbid).
	BackupSkipped = "BackupSkipped"
	// BackupPruned: a schedule deleted a backup its retention no longer keeps.
	BackupPruned = "BackupPruned"
	// BackupDeleted: a deleted MySQLBackup's stored object was deleted (deletionPolicy Delete).
	BackupDeleted = "BackupDeleted"
	// Retained: a deleted object's account or schema was left in place (deletionPolicy Retain,
	// or the cluster is gone).
	Retained = "Retained"
)
