package executor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/toolbox"
)

// Extract unpacks a physical backup written by Run, read from r, into dir with the flavor's
// stream tool (mbstream / xbstream), decompressing on the way: nothing but the unpacked files
// reaches the disk. Result.Size is the compressed bytes read. tools runs the stream tool (nil:
// a child of this process).
func Extract(ctx context.Context, tools toolbox.Runner, f mysql.Flavor, r io.Reader, dir string) (Result, error) {
	name := "xbstream"
	if f == mysql.MariaDB {
		name = "mbstream"
	}
	return decompressInto(ctx, tools, r, toolbox.Tool{Name: name, Args: []string{"-x", "-C", dir}})
}

// Prepare applies the redo log of an extracted physical backup in dir, so that a server can
// start on it. useMemoryMB sizes the tool's buffer pool (0: the tool's default). tools runs
// the backup tool (nil: a child of this process).
func Prepare(ctx context.Context, tools toolbox.Runner, f mysql.Flavor, dir string, useMemoryMB int) (Result, error) {
	name := "xtrabackup"
	if f == mysql.MariaDB {
		name = "mariadb-backup"
	}
	args := []string{"--prepare", "--target-dir=" + dir}
	if useMemoryMB > 0 {
		args = append(args, fmt.Sprintf("--use-memory=%dM", useMemoryMB))
	}
	var out tail
	rss, err := toolbox.Or(tools).Run(ctx, toolbox.Tool{Name: name, Args: args, Stdout: &out, Stderr: &out})
	res := Result{ToolMaxRSS: rss}
	if err != nil {
		return res, fmt.Errorf("%s --prepare failed: %w: %s", name, err, lastLines(out.String(), 5))
	}
	return res, nil
}

// BackupInfo is what a physical backup records about itself.
type BackupInfo struct {
	// GTID is the position the backup is consistent with.
	GTID string
	// ServerVersion is the version of the server it was taken from.
	ServerVersion string
}

// Files both tools write into a physical backup (MariaDB kept xtrabackup's names).
const (
	binlogInfoFile = "xtrabackup_binlog_info"
	infoFile       = "xtrabackup_info"
)

// ReadBackupInfo reads the GTID position and server version an extracted physical backup
// records. The binlog info file holds "<file>\t<position>\t<gtid set>", where a MySQL GTID
// set may continue on further lines.
func ReadBackupInfo(dir string) (BackupInfo, error) {
	var info BackupInfo
	b, err := os.ReadFile(filepath.Join(dir, binlogInfoFile))
	if err != nil {
		return info, fmt.Errorf("read the backup's binlog position: %w", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) >= 3 {
		info.GTID = strings.Join(fields[2:], "")
	}
	f, err := os.Open(filepath.Join(dir, infoFile))
	if err != nil {
		return info, fmt.Errorf("read the backup's description: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.TrimSpace(k) == "server_version" {
			info.ServerVersion = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return info, fmt.Errorf("read the backup's description: %w", err)
	}
	return info, nil
}

// SameSeries reports whether two server versions ("10.11.6-MariaDB-log", "8.4.3") share
// major and minor version: a physical backup only starts on a server of its own series.
func SameSeries(a, b string) bool {
	series := func(v string) string {
		parts := strings.SplitN(v, ".", 3)
		if len(parts) < 2 {
			return v
		}
		return parts[0] + "." + parts[1]
	}
	return a != "" && series(a) == series(b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
