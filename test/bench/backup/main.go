// Command backup measures backups and restores of about 1 GB on a real MariaDB server to a real
// S3 server (versitygw from _output/bin): the executor and storage packages the agent uses,
// in this process. It fills one InnoDB table to the requested size with rows of random hex (so
// that compression has work but not everything compresses away), then runs a logical and a
// physical backup and a logical restore into a second server, and prints a table: data size,
// stored (compressed) size, time, throughput over the data size, and peak memory: the
// process's RSS high-water mark (Go side: compression and upload buffers) and the backup
// tool's own maximum RSS.
//
// Usage: go run ./test/bench/backup -size-mb 1024   (or make bench-backup)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/bench/benchutil"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

const myCnf = "[mysqld]\nlog_bin = binlog\nlog_slave_updates = ON\ngtid_strict_mode = ON\nbinlog_format = ROW\nskip_name_resolve = ON\nskip_slave_start = ON\nread_only = OFF\ninnodb_buffer_pool_size = 256M\ninnodb_log_file_size = 256M\ninnodb_flush_log_at_trx_commit = 2\nsync_binlog = 0\nmax_allowed_packet = 64M\n"

type row struct {
	what              string
	data, stored      int64
	took, raw         time.Duration
	rssMiB, toolRSSMB float64
}

func main() {
	sizeMB := flag.Int("size-mb", 1024, "approximate size of the table to back up, in MiB")
	flag.Parse()
	err := benchutil.Run(func(t *benchutil.T) error { return run(t, int64(*sizeMB)<<20) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(t *benchutil.T, size int64) error {
	ctx := context.Background()
	gw := s3.Start(t)
	servers := mariadb.Start(t, 2, mariadb.Options{MyCnf: myCnf})
	// The helpers' connections time out after 3 s; filling and counting take longer.
	db, err := mysql.Open(mysql.ConnConfig{Addr: servers[0].Addr(), User: mariadb.AdminUser, Password: mariadb.AdminPassword, Timeout: time.Hour})
	if err != nil {
		return err
	}
	defer db.Close()
	src := &mysql.Instance{DB: db, Flavor: mysql.MariaDB}
	fmt.Fprintf(os.Stderr, "filling %d MiB ...\n", size>>20)
	start := time.Now()
	data, err := fill(ctx, src, size)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "filled %d MiB in %v\n", data>>20, time.Since(start).Round(time.Second))
	store, err := storage.New(gw.Config("bench"))
	if err != nil {
		return err
	}
	var rows []row
	for _, method := range []string{executor.Logical, executor.Physical} {
		req := executor.Request{Flavor: mysql.MariaDB, Method: method, Socket: servers[0].Socket, DataDir: filepath.Join(servers[0].Dir, "data"),
			User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir()}
		raw, err := rawTool(ctx, t, req)
		if err != nil {
			return err
		}
		resetPeak()
		start := time.Now()
		res, err := executor.Run(ctx, req, func(r io.Reader) error { _, err := store.Put(ctx, method, r); return err })
		if err != nil {
			return err
		}
		rows = append(rows, row{what: method + " backup", data: data, stored: res.Size, took: time.Since(start), raw: raw,
			rssMiB: peakRSSMiB(), toolRSSMB: float64(res.ToolMaxRSS) / (1 << 20)})
	}
	r, err := store.Get(ctx, executor.Logical)
	if err != nil {
		return err
	}
	resetPeak()
	start = time.Now()
	res, err := executor.Restore(ctx, executor.Request{Flavor: mysql.MariaDB, Method: executor.Logical, Socket: servers[1].Socket,
		User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir()}, r)
	r.Close()
	if err != nil {
		return err
	}
	rows = append(rows, row{what: "logical restore", data: data, stored: res.Size, took: time.Since(start), rssMiB: peakRSSMiB(), toolRSSMB: float64(res.ToolMaxRSS) / (1 << 20)})
	var got int64
	dst, err := mysql.Open(mysql.ConnConfig{Addr: servers[1].Addr(), User: mariadb.AdminUser, Password: mariadb.AdminPassword, Timeout: time.Hour})
	if err != nil {
		return err
	}
	defer dst.Close()
	if err := dst.QueryRow("SELECT COUNT(*) FROM bench.t").Scan(&got); err != nil {
		return fmt.Errorf("count restored rows: %w", err)
	}

	fmt.Printf("\n| operation | table data | stored (zstd) | time | throughput | raw tool to a local file | time / raw | Go process peak RSS | tool max RSS |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		raw, ratio := "-", "-"
		if r.raw > 0 {
			raw, ratio = r.raw.Round(100*time.Millisecond).String(), fmt.Sprintf("%.2f", r.took.Seconds()/r.raw.Seconds())
		}
		fmt.Printf("| %s | %d MiB | %d MiB | %v | %.0f MiB/s | %s | %s | %.0f MiB | %.0f MiB |\n", r.what, r.data>>20, r.stored>>20,
			r.took.Round(100*time.Millisecond), float64(r.data)/(1<<20)/r.took.Seconds(), raw, ratio, r.rssMiB, r.toolRSSMB)
	}
	fmt.Printf("\nrestored rows: %d\n", got)
	return nil
}

// rawTool runs the executor's backup command alone, its output to a local file without
// compression, and returns how long it took: the baseline of the table's ratio.
func rawTool(ctx context.Context, t *benchutil.T, req executor.Request) (time.Duration, error) {
	cmd, cleanup, err := executor.BackupCommand(ctx, req)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	out, err := os.Create(filepath.Join(t.TempDir(), "raw"))
	if err != nil {
		return 0, err
	}
	defer out.Close()
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = out, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %w: %s", cmd.Args[0], err, stderr.String())
	}
	return time.Since(start), nil
}

// randomHex is 896 characters of random hex per row: it compresses to about half, like text
// data, rather than to nothing.
var randomHex = "CONCAT(" + strings.TrimSuffix(strings.Repeat("MD5(RAND()),", 28), ",") + ")"

// fill creates bench.t and doubles it until its data reaches size bytes; it returns the
// table's data length as InnoDB reports it.
func fill(ctx context.Context, in *mysql.Instance, size int64) (int64, error) {
	if err := in.ExecSQL(ctx, "CREATE DATABASE bench",
		"CREATE TABLE bench.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, a CHAR(32), b VARCHAR(1024))",
		"INSERT INTO bench.t (a, b) VALUES (MD5(RAND()), "+randomHex+")"); err != nil {
		return 0, err
	}
	var rows int64 = 1
	for rows*1100 < size {
		if err := in.ExecSQL(ctx, "INSERT INTO bench.t (a, b) SELECT MD5(RAND()), "+randomHex+" FROM bench.t"); err != nil {
			return 0, err
		}
		rows *= 2
	}
	if err := in.ExecSQL(ctx, "ANALYZE TABLE bench.t"); err != nil {
		return 0, err
	}
	var data int64
	err := in.DB.QueryRowContext(ctx, "SELECT DATA_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA='bench' AND TABLE_NAME='t'").Scan(&data)
	return data, err
}

// resetPeak resets the process's RSS high-water mark (Linux: write 5 to clear_refs).
func resetPeak() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func peakRSSMiB() float64 { return statusKiB("VmHWM") / 1024 }

func statusKiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			v, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return v
		}
	}
	return 0
}
