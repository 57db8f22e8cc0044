// Package events is the catalogue of the events the operator emits. Each Event is a type
// (Normal or Warning), a reason and a message template; controllers emit them only through
// Record, so every message a user can see is written here, once. Reasons are part of the
// operator's interface (users alert on them), so they are stable: add new ones, never rename.
// Several events may share a reason when they say the same thing about different objects.
package events

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// Event is one kind of event.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is the stable, machine-readable reason.
	Reason string
	// Message is an fmt template filled by Record's arguments. It names no secret: no argument
	// may carry one.
	Message string
}

// Record emits e on obj, its message filled with args.
func (e Event) Record(r record.EventRecorder, obj runtime.Object, args ...any) {
	r.Eventf(obj, e.Type, e.Reason, e.Message, args...)
}

func normal(reason, message string) Event  { return Event{corev1.EventTypeNormal, reason, message} }
func warning(reason, message string) Event { return Event{corev1.EventTypeWarning, reason, message} }

// MySQLCluster events.
var (
	// InvalidSpec: the spec cannot be acted on; nothing is changed until it is fixed. The
	// argument is the validation error. Also emitted on MySQLUsers, MySQLDatabases and
	// MySQLBackupSchedules.
	InvalidSpec = warning("InvalidSpec", "%s")
	// DowngradeRefused: spec.version is older than the running version; the running version
	// is kept. The argument is the condition message.
	DowngradeRefused = warning("DowngradeRefused", "%s")
	// ErrResourceExists: a child object of the expected name exists but is not controlled by
	// the cluster; the operator leaves it alone. The argument is the condition message.
	ErrResourceExists = warning("ErrResourceExists", "%s")
	// ClusterSecretNotFound: the Secret rootPasswordSecretRef names, or its key, is missing;
	// the members cannot start until it exists. The argument is the condition message.
	ClusterSecretNotFound = warning("SecretNotFound", "%s")
	// SyncFailed: writing a child object failed; the operator retries with backoff. The
	// argument is the condition message.
	SyncFailed = warning("SyncFailed", "%s")
	// Created: child objects were created, one event per reconcile ("Kind name, Kind name").
	Created = normal("Created", "Created %s")
	// Updated: child objects were changed to match the spec, one event per reconcile ("Kind
	// name, Kind name").
	Updated = normal("Updated", "Updated %s")
	// MemberRestarted: a member's pod was deleted so that it restarts on the new pod template
	// (pod).
	MemberRestarted = normal("MemberRestarted", "Restarting member %s onto the new pod template")
	// MemberRestoreRestarted: a member's pod was deleted so that it restarts onto restored
	// data (pod, MySQLRestore).
	MemberRestoreRestarted = normal("MemberRestarted", "Restarting member %s onto the data restored by MySQLRestore %s")
	// AgentUpdated: a member's agent container was moved to the operator's agent image in
	// place (pod, image).
	AgentUpdated = normal("AgentUpdated", "Moved the agent of pod %s to %s without restarting the server")
	// VersionUpgraded: every member runs the new server version (from, to).
	VersionUpgraded = normal("VersionUpgraded", "Every member runs version %s (was %s)")
	// FailOver: the primary was down and a replica was promoted (old, new).
	FailOver = warning("FailOver", "Primary %s is down: promoted %s")
	// SwitchOver: the primary role moved to another member on request or for a restart
	// (old, new).
	SwitchOver = normal("SwitchOver", "Switched over from %s to %s")
	// ErrantReplica: a replica has transactions the primary does not have; it is out of
	// service (pod).
	ErrantReplica = warning("ErrantReplica", "%s has transactions the primary does not have; it is out of service until re-seeded")
	// FencedWritable: an instance besides the primary was writable and was made read-only
	// (pods, primary).
	FencedWritable = warning("FencedWritable", "Made %v read-only: only the primary %s may be writable")
	// ClusteringFailed: a clustering operation failed; the next round retries it (operation,
	// error).
	ClusteringFailed = warning("ClusteringFailed", "%s failed: %v")
	// MemberReseeded: a member diverged from the primary (spec.replication.reseed allows it)
	// and is re-seeded: its data is replaced with a copy of a healthy peer (pods, primary).
	MemberReseeded = warning("MemberReseeded", "%s diverged from the primary %s: re-seeding it from a healthy peer (its own transactions are discarded)")
	// MemberCorruptReseeded: a member's server stops at every start on data InnoDB reports
	// corrupt, and the member is re-seeded from a healthy peer (pods, primary).
	MemberCorruptReseeded = warning("MemberReseeded", "The server of %s stops at start on corrupt data: re-seeding it from a healthy peer (primary %s)")
	// MemberReseedRequested: a person asked to re-seed a member (mysqlop.io/reseed) and its
	// data is being replaced with a copy of a healthy peer (pod, primary).
	MemberReseedRequested = warning("MemberReseeded", "Re-seeding %s from a healthy peer as requested (primary %s): its data is replaced")
	// ReseedRefused: a requested re-seed names no member, or the primary (pod).
	ReseedRefused = warning("ReseedRefused", "Re-seed of %s refused: it is not a member, or it is the primary (switch over first); the request is removed")
	// WritesStopped: a cluster's primary was made read-only because a restore runs (primary,
	// why).
	WritesStopped = normal("WritesStopped", "Made primary %s read-only: writes are stopped (%s)")
	// WritesResumed: the restore that stopped a cluster's writes ended (MySQLRestore).
	WritesResumed = normal("WritesResumed", "MySQLRestore %s ended: writes resume")
	// ArchiveFailed: binary log archiving could not be configured, or its last round failed
	// (the condition message).
	ArchiveFailed = warning("ArchiveFailed", "%s")
	// ArchiveGap: an archived binary log does not continue the chain (the condition message).
	ArchiveGap = warning("ArchiveGap", "%s")
	// ArchiveLagging: the oldest transaction not archived is older than twice the interval
	// (the condition message).
	ArchiveLagging = warning("ArchiveLagging", "%s")
	// CertificateIssued: the operator issued the servers' certificate (its expiry, why).
	CertificateIssued = normal("CertificateIssued", "Issued the servers' TLS certificate, valid until %s: %s")
	// CertificateExpiring: the served certificate nears its expiry unrenewed (the condition
	// message).
	CertificateExpiring = warning("CertificateExpiring", "%s")
	// CASecretInvalid: spec.tls.caSecretRef names no usable CA (the condition message).
	CASecretInvalid = warning("CASecretInvalid", "%s")
	// CertManagerMissing: spec.tls.certManager is set without cert-manager's CRDs (the
	// condition message).
	CertManagerMissing = warning("CertManagerMissing", "%s")
	// StaleFenceLifted: the fence names a restore that is not running; the cluster controller
	// lifted it (MySQLRestore).
	StaleFenceLifted = normal("WritesResumed", "MySQLRestore %s is not running: writes resume")
)

// MySQLUser and MySQLDatabase events.
var (
	// SecretNotFound: a MySQLUser's password Secret or key is missing; no account is created
	// or changed until it exists. The argument is the condition message.
	SecretNotFound = warning("SecretNotFound", "%s")
	// SQLFailed: the server refused an account or schema statement; retried with backoff.
	// The argument is the server's error.
	SQLFailed = warning("SQLFailed", "%s")
	// ClusterNotReady: the referenced cluster cannot take account or schema changes yet. The
	// argument says why.
	ClusterNotReady = warning("ClusterNotReady", "%s")
	// UserCreated: a MySQLUser's account was created (account).
	UserCreated = normal("UserCreated", "Created account %s")
	// PasswordRotated: a MySQLUser's password was set from a changed Secret (account).
	PasswordRotated = normal("PasswordRotated", "Set the password of %s from its Secret")
	// PasswordRotatedAndUpdated: as PasswordRotated, with grants or limits changed too (account).
	PasswordRotatedAndUpdated = normal("PasswordRotated", "Set the password of %s from its Secret; updated its grants and limits")
	// UserUpdated: a MySQLUser's grants or limits were changed to match the spec (account).
	UserUpdated = normal("UserUpdated", "Updated the grants and limits of %s")
	// UserDropped: a deleted MySQLUser's account was dropped (account).
	UserDropped = normal("UserDropped", "Dropped account %s")
	// DatabaseCreated: a MySQLDatabase's schema was created (schema).
	DatabaseCreated = normal("DatabaseCreated", "Created database %s")
	// DatabaseUpdated: a MySQLDatabase's character set or collation was changed (schema).
	DatabaseUpdated = normal("DatabaseUpdated", "Altered database %s")
	// DatabaseDropped: a deleted MySQLDatabase's schema was dropped (schema).
	DatabaseDropped = normal("DatabaseDropped", "Dropped database %s (deletionPolicy Delete)")
	// RetainedClusterGone: a deleted object's cluster is gone: nothing to drop (cluster).
	RetainedClusterGone = normal("Retained", "MySQLCluster %s is gone: nothing to drop")
	// RetainedByPolicy: a deleted object's account or schema was kept (what was kept).
	RetainedByPolicy = normal("Retained", "Kept %s (deletionPolicy Retain)")
	// RetainedForOwner: a deleted object's account or schema was kept because another object
	// manages it (what was kept, the owner).
	RetainedForOwner = normal("Retained", "Kept %s: %s manages it")
	// RetainedNotCreated: a deleted MySQLDatabase's schema was kept because it did not create
	// it (what was kept).
	RetainedNotCreated = normal("Retained", "Kept %s: this MySQLDatabase did not create it")
	// RetainedNotOwned: a deleted MySQLUser's account was kept because it did not create or
	// adopt it (what was kept).
	RetainedNotOwned = normal("Retained", "Kept %s: this MySQLUser did not create or adopt it")
)

// MySQLBackup, MySQLBackupSchedule and MySQLRestore events.
var (
	// BackupWaiting: a backup waits for its cluster, a ready member or its storage Secret
	// (what it waits for).
	BackupWaiting = normal("BackupWaiting", "%s")
	// BackupStarted: a member's agent took a backup (member, method, location).
	BackupStarted = normal("BackupStarted", "Member %s takes a %s backup to %s")
	// BackupCompleted: a backup is stored (size, location, GTID).
	BackupCompleted = normal("BackupCompleted", "Stored %d bytes at %s, consistent with GTID %s")
	// BackupFailed: a backup failed; it is not retried (why).
	BackupFailed = warning("BackupFailed", "%s")
	// BackupDeleted: a deleted MySQLBackup's stored object was deleted (location).
	BackupDeleted = normal("BackupDeleted", "Deleted %s (deletionPolicy Delete)")
	// BackupScheduled: a schedule created a backup (backup, due time).
	BackupScheduled = normal("BackupScheduled", "Created backup %s for %s")
	// BackupSkipped: a scheduled backup was skipped because one still ran (due time, running).
	BackupSkipped = normal("BackupSkipped", "Skipped the backup due at %s: %v still running (concurrencyPolicy Forbid)")
	// BackupPruned: a schedule deleted a backup its retention no longer keeps (backup).
	BackupPruned = normal("BackupPruned", "Deleted backup %s: retention no longer keeps it")
	// RestoreWaiting: a restore waits for its backup, its cluster or the storage Secret (what
	// it waits for).
	RestoreWaiting = normal("RestoreWaiting", "%s")
	// RestoreStarted: the primary loads a logical backup, or every member stages a physical
	// one (what started).
	RestoreStarted = normal("RestoreStarted", "%s")
	// RestoreBootstrapping: a new cluster's spec.bootstrap became a MySQLRestore (backup,
	// restore).
	RestoreBootstrapping = normal("RestoreStarted", "Bootstrapping from MySQLBackup %s through MySQLRestore %s")
	// RestoreCompleted: a backup was restored into the cluster (what was restored).
	RestoreCompleted = normal("RestoreCompleted", "%s")
	// RestoreFailed: a restore failed; it is not retried (why).
	RestoreFailed = warning("RestoreFailed", "%s")
)
