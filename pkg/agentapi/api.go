// Package agentapi is the agent's HTTP API as its clients see it: the client, the request and
// response types, the TLS helpers and the names shared with the operator. The operator imports
// it and nothing else of the agent, so it links neither the agent's server nor the backup tools.
package agentapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// BackupRequest is the body of POST /api/v1/backups. The storage credentials travel in it,
// from the operator (which read them from the user's Secret) to the agent, and are held only
// for the backup's duration.
type BackupRequest struct {
	// ID names the backup (namespace/name of the MySQLBackup and its UID); a second request
	// with the same ID returns the first one's state.
	ID string `json:"id"`
	// Method is logical or physical.
	Method string `json:"method"`
	// Object is the object name under the storage prefix.
	Object  string        `json:"object"`
	Storage StorageConfig `json:"storage"`
	// TimeoutSeconds bounds the backup; 0 means the agent's own limit.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
	// SHA256, for a restore, is the stored object's checksum: the object is read once to
	// verify it before anything is loaded, so a corrupted backup leaves the server as it was.
	SHA256 string `json:"sha256,omitempty"`
	// Replay, with Method MethodReplay, applies archived binary logs (Object is unused).
	Replay *ReplayRequest `json:"replay,omitempty"`
}

// MethodReplay is the method of a restore job that replays archived binary logs on top of a
// restored backup, for a point-in-time restore.
const MethodReplay = "replay"

// ReplayRequest says which archived binary logs a replay applies, and where it stops. The
// transactions get new GTIDs from the server that applies them; the bounds are in the
// archive's GTIDs.
type ReplayRequest struct {
	// Objects are the archived binary logs, in the archive's order, under the storage prefix.
	Objects []string `json:"objects"`
	// Start is the restored backup's GTID position: transactions in it are not applied.
	Start string `json:"start"`
	// StopTime, when set, leaves out every transaction after it (binary logs record whole
	// seconds: a transaction of second s is applied when s <= StopTime).
	StopTime *time.Time `json:"stopTime,omitempty"`
	// StopGTID, when set, leaves out every transaction not in it.
	StopGTID string `json:"stopGtid,omitempty"`
}

// StorageConfig is storage.Config as JSON.
type StorageConfig struct {
	Endpoint        string `json:"endpoint,omitempty"`
	Region          string `json:"region,omitempty"`
	Bucket          string `json:"bucket"`
	Prefix          string `json:"prefix,omitempty"`
	ForcePathStyle  bool   `json:"forcePathStyle,omitempty"`
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
	CA              []byte `json:"ca,omitempty"`
}

// Config converts c.
func (c StorageConfig) Config() storage.Config {
	return storage.Config{Endpoint: c.Endpoint, Region: c.Region, Bucket: c.Bucket, Prefix: c.Prefix, ForcePathStyle: c.ForcePathStyle,
		AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, CA: c.CA}
}

// Backup phases the agent reports.
const (
	BackupRunning  = "Running"
	BackupComplete = "Complete"
	BackupFailed   = "Failed"
)

// BackupState is the answer of GET /api/v1/backups/{id}.
type BackupState struct {
	ID             string     `json:"id"`
	Phase          string     `json:"phase"`
	Location       string     `json:"location,omitempty"`
	Size           int64      `json:"size,omitempty"`
	SHA256         string     `json:"sha256,omitempty"`
	GTID           string     `json:"gtid,omitempty"`
	Error          string     `json:"error,omitempty"`
	StartTime      time.Time  `json:"startTime"`
	CompletionTime *time.Time `json:"completionTime,omitempty"`
	// Transactions and LastTransactionTime, for a replay, count the transactions applied and
	// give the time of the last one; GTID is the archive's position reached.
	Transactions        int        `json:"transactions,omitempty"`
	LastTransactionTime *time.Time `json:"lastTransactionTime,omitempty"`
	// Checksums, for a checksum job, are the server's table checksums once Complete.
	Checksums []mysql.TableChecksum `json:"checksums,omitempty"`
}

// ChecksumRequest is the body of POST /api/v1/checksums: a job that checksums every table
// outside the server's own schemas (mysql.Instance.Checksums), for a verification restore.
type ChecksumRequest struct {
	// ID names the job; a second request with the same ID returns the first one's state.
	ID string `json:"id"`
	// TimeoutSeconds bounds the job; 0 means the agent's own limit.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
}

// ErrBackupNotFound is returned by a Client when the agent does not know the backup.
var ErrBackupNotFound = errors.New("agent does not know the backup")

// Restore phases the agent reports besides the job phases (Running, Failed; Complete for a
// logical restore).
const (
	// RestoreStaged: a physical restore is unpacked and prepared beside the datadir.
	RestoreStaged = "Staged"
	// RestoreCommitted: the operator committed it; init puts it in place at the next pod start.
	RestoreCommitted = "Committed"
	// RestoreApplied: init put it in place; the server runs on the restored data.
	RestoreApplied = "Applied"
)

// StatusJSON is the JSON form of mysql.Status served by the API.
type StatusJSON struct {
	ServerID             uint32       `json:"serverId"`
	Version              string       `json:"version"`
	ReadOnly             bool         `json:"readOnly"`
	SuperReadOnly        bool         `json:"superReadOnly"`
	Executed             string       `json:"executed"`
	Purged               string       `json:"purged"`
	SemiSyncSource       bool         `json:"semiSyncSource"`
	SemiSyncReplica      bool         `json:"semiSyncReplica"`
	SemiSyncSourceActive bool         `json:"semiSyncSourceActive"`
	Replica              *ReplicaJSON `json:"replica,omitempty"`
	Ready                bool         `json:"ready"`
	Reason               string       `json:"reason"`
}

// ReplicaJSON is the JSON form of mysql.ReplicaStatus.
type ReplicaJSON struct {
	SourceHost   string `json:"sourceHost"`
	SourcePort   int    `json:"sourcePort"`
	IORunning    bool   `json:"ioRunning"`
	SQLRunning   bool   `json:"sqlRunning"`
	LastIOError  string `json:"lastIOError,omitempty"`
	LastSQLError string `json:"lastSQLError,omitempty"`
	Retrieved    string `json:"retrieved"`
	LagSeconds   *int64 `json:"lagSeconds,omitempty"`
}

// ReseedRequest asks an agent to have its member re-seeded at its next start.
type ReseedRequest struct {
	// Reason says why, for the logs (which transactions diverged, for instance).
	Reason string `json:"reason"`
}

// FileHoldsData is the file, beside the operator's my.cnf (a key of the same ConfigMap), that
// exists once the operator recorded that the cluster holds data (configmap.KeyHoldsData).
const FileHoldsData = "holds-data"

// Ordinal returns the StatefulSet ordinal at the end of a pod name: the one parser of member
// names, used by the agent (its own pod) and the operator (resources.Ordinal).
func Ordinal(podName string) (int, error) {
	i := strings.LastIndexByte(podName, '-')
	if i < 0 {
		return 0, fmt.Errorf("pod name %q has no ordinal", podName)
	}
	n, err := strconv.Atoi(podName[i+1:])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("pod name %q has no ordinal", podName)
	}
	return n, nil
}

// ArchiveRequest is the body of PUT /api/v1/archive: archive the server's binary logs to
// Storage under Prefix while the server is writable. The operator sends it to every member,
// so that whichever becomes primary archives, even while the operator is away.
type ArchiveRequest struct {
	Storage StorageConfig `json:"storage"`
	// Prefix is the archive's object prefix under the storage prefix.
	Prefix string `json:"prefix"`
	// IntervalSeconds bounds how long a transaction waits before it is archived.
	IntervalSeconds int64 `json:"intervalSeconds"`
	// RetainFrom is the GTID position of the cluster's oldest kept backup: archived files
	// wholly inside it are deleted. Empty keeps every file.
	RetainFrom string `json:"retainFrom,omitempty"`
}

// ID identifies the request's configuration: equal requests have equal IDs. The agent reports
// the ID in force, so the operator sends a request only when it changed.
func (r ArchiveRequest) ID() string {
	b, _ := json.Marshal(r)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ArchiveState is the answer of GET /api/v1/archive.
type ArchiveState struct {
	// Config identifies the configuration in force (a hash of the request); "" when none.
	Config string `json:"config,omitempty"`
	// Idle is set while the server is not writable: it does not archive.
	Idle bool `json:"idle,omitempty"`
	// End is the GTID state the archive holds.
	End string `json:"end,omitempty"`
	// From and Until are the times of the first and last archived transactions; Start is
	// the GTID state the chain starts from (a backup at or after it can be brought forward).
	From  *time.Time `json:"from,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	Start string     `json:"start,omitempty"`
	// LastArchived and LastArchiveTime name the last object this agent uploaded, and when.
	LastArchived    string     `json:"lastArchived,omitempty"`
	LastArchiveTime *time.Time `json:"lastArchiveTime,omitempty"`
	// LagSeconds and LagBytes measure what is not archived yet.
	LagSeconds float64 `json:"lagSeconds"`
	LagBytes   int64   `json:"lagBytes"`
	// Gap is set when an archived file did not continue the chain.
	Gap bool `json:"gap,omitempty"`
	// Error is the last round's failure, "" when it succeeded.
	Error string `json:"error,omitempty"`
	// RoundTime is when the last round ended.
	RoundTime time.Time `json:"roundTime"`
}
