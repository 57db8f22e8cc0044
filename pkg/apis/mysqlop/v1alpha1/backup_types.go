package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupMethod is how a backup is taken.
// +kubebuilder:validation:Enum=logical;physical
type BackupMethod string

const (
	// BackupLogical dumps SQL with mysqldump / mariadb-dump.
	BackupLogical BackupMethod = "logical"
	// BackupPhysical copies data files with xtrabackup / mariadb-backup.
	BackupPhysical BackupMethod = "physical"
)

// DeletionPolicy says what happens to data when the object that stands for it is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionRetain keeps the data.
	DeletionRetain DeletionPolicy = "Retain"
	// DeletionDelete removes the data.
	DeletionDelete DeletionPolicy = "Delete"
)

// JobPhase is the phase of a backup or a restore.
type JobPhase string

const (
	// JobPending means the object was accepted and waits for its preconditions.
	JobPending JobPhase = "Pending"
	// JobScheduled means a member was chosen and the work is about to start.
	JobScheduled JobPhase = "Scheduled"
	// JobRunning means the work is in progress.
	JobRunning JobPhase = "Running"
	// JobComplete means the work finished successfully.
	JobComplete JobPhase = "Complete"
	// JobFailed means the work failed; the Complete condition's message says why.
	JobFailed JobPhase = "Failed"
)

// ClusterReference names a MySQLCluster in the object's namespace.
type ClusterReference struct {
	// Name of the MySQLCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// LocalReference names an object of a known kind in the referring object's namespace.
type LocalReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BackupStorage says where backups are stored.
type BackupStorage struct {
	// S3 is S3-compatible object storage.
	S3 S3Storage `json:"s3"`
}

// S3Storage is a location in S3-compatible object storage.
type S3Storage struct {
	// Endpoint is the service URL; empty means AWS S3 for the region.
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// Bucket name.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	Bucket string `json:"bucket"`
	// Prefix is prepended to every object key.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// Region of the bucket.
	// +kubebuilder:default=us-east-1
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Region string `json:"region,omitempty"`
	// ForcePathStyle addresses the bucket as a path (endpoint/bucket/key), as most
	// self-hosted S3 servers need.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// CredentialsSecretRef names a Secret with keys accessKeyId and secretAccessKey. The Secret
	// must carry the label mysqlop.io/storage-credentials=true: a MySQLBackup hands its keys to
	// the endpoint it names, so only Secrets labelled for that purpose may be named.
	CredentialsSecretRef LocalReference `json:"credentialsSecretRef"`
	// CASecretRef names a Secret key holding a PEM CA bundle for the endpoint.
	// +optional
	CASecretRef *SecretKeyRef `json:"caSecretRef,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mybk,categories=mysqlop
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Method",type=string,JSONPath=`.spec.method`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Member",type=string,JSONPath=`.status.member`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.sizeBytes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MySQLBackup is one backup of a MySQLCluster, taken by one member's agent and stored in
// S3-compatible storage.
type MySQLBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the requested backup. It cannot be changed once created.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	Spec MySQLBackupSpec `json:"spec"`
	// Status is the progress and result of the backup.
	// +optional
	Status MySQLBackupStatus `json:"status,omitempty"`
}

// MySQLBackupSpec is a requested backup.
type MySQLBackupSpec struct {
	// ClusterRef is the cluster to back up.
	ClusterRef ClusterReference `json:"clusterRef"`
	// Method is logical (SQL dump, the default) or physical (data files).
	// +kubebuilder:default=logical
	// +optional
	Method BackupMethod `json:"method,omitempty"`
	// Storage is where the backup is written.
	Storage BackupStorage `json:"storage"`
	// Member forces the backup onto this pod; by default a healthy replica is chosen, and the
	// primary only when no replica is healthy.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Member string `json:"member,omitempty"`
	// Timeout fails the backup when it runs longer. Default 2h.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// DeletionPolicy says whether deleting this object deletes the stored backup.
	// +kubebuilder:default=Retain
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// MySQLBackupStatus is the progress and result of a backup.
type MySQLBackupStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is Pending, Scheduled, Running, Complete or Failed.
	// +optional
	Phase JobPhase `json:"phase,omitempty"`
	// Member is the pod that took the backup.
	// +optional
	Member string `json:"member,omitempty"`
	// Location is the object URL of the backup (s3://bucket/key).
	// +optional
	Location string `json:"location,omitempty"`
	// SizeBytes is the size of the stored object.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// SHA256 is the hex checksum of the stored object.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// GTIDPosition is the GTID set the backup is consistent with.
	// +optional
	GTIDPosition string `json:"gtidPosition,omitempty"`
	// StartTime is when the agent started the backup.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the backup completed or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Conditions describe validation and completion.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MySQLBackupList is a list of MySQLBackups.
type MySQLBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the backups.
	Items []MySQLBackup `json:"items"`
}

// ConcurrencyPolicy says what a schedule does when a backup is due while one still runs.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

const (
	// ConcurrencyAllow starts the new backup anyway.
	ConcurrencyAllow ConcurrencyPolicy = "Allow"
	// ConcurrencyForbid skips the new backup.
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
	// ConcurrencyReplace cancels the running backup and starts the new one.
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mybks,categories=mysqlop
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Schedule",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Last Success",type=string,JSONPath=`.status.lastSuccessfulBackup`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 242",message="metadata.name must be at most 242 characters: the MySQLBackups it creates are named <name>-<Unix time of the run>"

// MySQLBackupSchedule creates MySQLBackups on a cron schedule and prunes old ones.
type MySQLBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the schedule.
	Spec MySQLBackupScheduleSpec `json:"spec"`
	// Status is what the schedule last did.
	// +optional
	Status MySQLBackupScheduleStatus `json:"status,omitempty"`
}

// MySQLBackupScheduleSpec is a backup schedule.
type MySQLBackupScheduleSpec struct {
	// Schedule is a cron expression: five fields, or a descriptor such as @daily or
	// @every 6h. Missed times are not caught up: only the most recent one runs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`
	// TimeZone is an IANA time zone name for the schedule; default UTC.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone *string `json:"timeZone,omitempty"`
	// Suspend stops new backups from being created; existing ones are kept.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// ConcurrencyPolicy applies when a backup is due while the previous one still runs.
	// +kubebuilder:default=Forbid
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`
	// Retention says which completed backups to keep.
	// +optional
	Retention BackupRetention `json:"retention,omitempty"`
	// BackupTemplate is the spec of every backup created.
	BackupTemplate MySQLBackupSpec `json:"backupTemplate"`
	// Verify checks every backup that completes: a MySQLRestore <backup>-verify with
	// spec.verify is created for it (scratch clusters, table checksums against the earlier
	// backup replayed through the archive; docs/backup.md, "Verification"). It is owned by
	// the backup, so retention deletes it with the backup.
	// +optional
	Verify bool `json:"verify,omitempty"`
}

// BackupRetention selects backups a schedule keeps; the others are deleted (and their stored
// objects too when their deletionPolicy is Delete).
type BackupRetention struct {
	// KeepLast keeps this many of the newest completed backups.
	// +kubebuilder:validation:Minimum=1
	// +optional
	KeepLast *int32 `json:"keepLast,omitempty"`
	// MaxAge deletes completed backups older than this.
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// MySQLBackupScheduleStatus is what a schedule last did.
type MySQLBackupScheduleStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastScheduleTime is the last scheduled time handled: a backup was created for it, or
	// skipped under concurrencyPolicy Forbid.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastSuccessfulBackup is the name of the newest completed backup.
	// +optional
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`
	// Active lists backups created by this schedule that have not finished.
	// +optional
	Active []string `json:"active,omitempty"`
	// Conditions describe the schedule's validity.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MySQLBackupScheduleList is a list of MySQLBackupSchedules.
type MySQLBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the schedules.
	Items []MySQLBackupSchedule `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=myrs,categories=mysqlop
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.status.backup`
// +kubebuilder:printcolumn:name="Method",type=string,JSONPath=`.status.method`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.status.step`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// MySQLRestore restores a MySQLBackup into a MySQLCluster. Writes are stopped for the whole
// restore. A logical backup is loaded through the primary and replicates to every replica; a
// physical one is unpacked on every member and each restarts onto it, so every member holds
// the backup's data at its GTID position. With spec.verify it checks a backup and the
// archive leading to it in scratch clusters instead, leaving the cluster alone.
type MySQLRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the requested restore. It cannot be changed once created.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	Spec MySQLRestoreSpec `json:"spec"`
	// Status is the progress and result of the restore.
	// +optional
	Status MySQLRestoreStatus `json:"status,omitempty"`
}

// MySQLRestoreSpec is a requested restore.
// +kubebuilder:validation:XValidation:rule="has(self.backupRef) || has(self.target)",message="set backupRef, target, or both"
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || !self.verify || (has(self.backupRef) && !has(self.target))",message="verify checks the backup of spec.backupRef: set it, and no target"
type MySQLRestoreSpec struct {
	// ClusterRef is the cluster to restore into; with verify, the cluster whose backup is
	// checked (nothing is done to it).
	ClusterRef ClusterReference `json:"clusterRef"`
	// BackupRef is the MySQLBackup to restore; it must be Complete. With a target it can be
	// left out: the newest Complete backup of the cluster that finished before the target is
	// restored.
	// +optional
	BackupRef LocalReference `json:"backupRef,omitzero"`
	// Target restores to a point after the backup: the backup's cluster's archived binary logs
	// (its spec.binlogArchive) are replayed up to it. A target the archive cannot reach (a
	// gap, before the backup, after the last archived transaction) fails the restore before
	// writes are stopped, naming what the archive covers.
	// +optional
	Target *RestoreTarget `json:"target,omitempty"`
	// Timeout bounds the restore from its start; past it, the restore fails and writes resume.
	// Default 6h.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Verify checks spec.backupRef and the binary log archive that leads to it without
	// touching the cluster: the backup is restored into a new one-member scratch cluster, the
	// cluster's newest earlier backup into another and brought to the first's GTID position
	// by replaying the archive, and every table's checksum is compared between the two. The
	// scratch clusters and their volumes are deleted when the verification ends.
	// +optional
	Verify bool `json:"verify,omitempty"`
}

// RestoreTarget is a point to restore to; exactly one field is set.
// +kubebuilder:validation:XValidation:rule="(has(self.time) ? 1 : 0) + (has(self.gtid) ? 1 : 0) + (has(self.latest) && self.latest ? 1 : 0) == 1",message="set exactly one of time, gtid and latest"
type RestoreTarget struct {
	// Time (RFC 3339): the transactions committed at or before it are restored, none after
	// it. Binary logs record whole seconds: a transaction of second s is restored when s is
	// at or before Time.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// GTID is a GTID set (MySQL: uuid:1-57) or position (MariaDB: 0-1-57): the transactions in
	// it are restored, none other.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	GTID string `json:"gtid,omitempty"`
	// Latest restores every archived transaction.
	// +optional
	Latest bool `json:"latest,omitempty"`
}

// RestoreStep is where a running restore is.
// +kubebuilder:validation:Enum=Fencing;Loading;Staging;Restarting;Rejoining;Replaying;Resuming;Verifying
type RestoreStep string

// Steps of a running restore.
const (
	// RestoreFencing: writes are being stopped on the cluster.
	RestoreFencing RestoreStep = "Fencing"
	// RestoreLoading: a logical backup is loaded through the primary.
	RestoreLoading RestoreStep = "Loading"
	// RestoreStaging: every member unpacks and prepares a physical backup beside its data.
	RestoreStaging RestoreStep = "Staging"
	// RestoreRestarting: the members restart onto the restored data.
	RestoreRestarting RestoreStep = "Restarting"
	// RestoreRejoining: the restarted members replicate from the primary again; writes resume
	// once all do.
	RestoreRejoining RestoreStep = "Rejoining"
	// RestoreReplaying: the primary applies archived binary logs up to the target (a
	// point-in-time restore); the transactions replicate to every member.
	RestoreReplaying RestoreStep = "Replaying"
	// RestoreResuming: the data is restored and the fence lifted; the restore completes once
	// the primary takes writes again.
	RestoreResuming RestoreStep = "Resuming"
	// RestoreVerifying: a verification restore fills its scratch clusters and compares their
	// checksums.
	RestoreVerifying RestoreStep = "Verifying"
)

// VerificationStatus is what a verification restore (spec.verify) compared.
type VerificationStatus struct {
	// Base is the earlier backup brought to the verified backup's GTID position by replaying
	// the archive; empty when the cluster has none or archives no binary logs, in which case
	// only the backup itself is checked (it restores and every table reads back).
	// +optional
	Base string `json:"base,omitempty"`
	// BackupCluster is the scratch cluster the verified backup is restored into.
	// +optional
	BackupCluster string `json:"backupCluster,omitempty"`
	// ReplayCluster is the scratch cluster the base is restored into and replayed.
	// +optional
	ReplayCluster string `json:"replayCluster,omitempty"`
	// Tables is the number of tables compared (every base table outside the server's own
	// schemas).
	Tables int `json:"tables,omitempty"`
	// Mismatched names the tables whose checksums differ or that only one scratch cluster
	// holds (at most 20).
	// +listType=atomic
	// +optional
	Mismatched []string `json:"mismatched,omitempty"`
}

// ReplayStatus is what a point-in-time restore replayed.
type ReplayStatus struct {
	// Files is the number of archived binary logs read.
	Files int `json:"files,omitempty"`
	// Transactions counts the transactions applied.
	Transactions int `json:"transactions,omitempty"`
	// LastTransactionTime is the time of the last transaction applied.
	// +optional
	LastTransactionTime *metav1.Time `json:"lastTransactionTime,omitempty"`
	// GTID is the archive's GTID position reached (the applied transactions got new GTIDs
	// from the primary).
	// +optional
	GTID string `json:"gtid,omitempty"`
}

// MySQLRestoreStatus is the progress and result of a restore.
type MySQLRestoreStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is Pending, Running, Complete or Failed.
	// +optional
	Phase JobPhase `json:"phase,omitempty"`
	// Method is the method of the backup restored.
	// +optional
	Method BackupMethod `json:"method,omitempty"`
	// Step is where a running restore is.
	// +optional
	Step RestoreStep `json:"step,omitempty"`
	// Member is the primary a logical backup is loaded through.
	// +optional
	Member string `json:"member,omitempty"`
	// Members are the members a physical backup is restored on: all of them.
	// +listType=atomic
	// +optional
	Members []string `json:"members,omitempty"`
	// Restarted are the members whose pods the restore deleted, so that they start on the
	// restored data; each is restarted once.
	// +listType=atomic
	// +optional
	Restarted []string `json:"restarted,omitempty"`
	// GTIDPosition is the GTID position of the backup restored.
	// +optional
	GTIDPosition string `json:"gtidPosition,omitempty"`
	// Backup is the MySQLBackup restored: spec.backupRef, or the one chosen for the target.
	// +optional
	Backup string `json:"backup,omitempty"`
	// Replay is the progress of a point-in-time restore's replay of archived binary logs.
	// +optional
	Replay *ReplayStatus `json:"replay,omitempty"`
	// Verification is what a verification restore (spec.verify) compared.
	// +optional
	Verification *VerificationStatus `json:"verification,omitempty"`
	// StartTime is when the restore started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the restore completed or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Conditions describe validation and completion.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// MySQLRestoreList is a list of MySQLRestores.
type MySQLRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the restores.
	Items []MySQLRestore `json:"items"`
}
