// Command pitr measures point-in-time recovery on real MariaDB servers and a real S3 server
// (versitygw from _output/bin), with the agent's own code in this process and the tools behind
// a toolbox server, as in a pod:
//
//   - Replay: a source server writes about -size-mb of binary logs (transactions of 8 rows of
//     ~900 bytes, files rotated at 32 MiB), which are archived (pkg/archive). A second server
//     replays them through the agent (objects streamed from S3, cut in Go, mariadb-binlog,
//     server_id and sequence numbers dropped, one client session); a third replays the same
//     files, downloaded to local disk beforehand, with `mariadb-binlog files... | mariadb` run
//     by hand. Both end with the source's checksum. The table gives MiB of binary log and
//     transactions per second for each, and the ratio.
//   - Archive lag: a steady writer commits -rate transactions per second for -lag-seconds
//     while the agent archives with -interval; the lag of a transaction is the time from its
//     commit to the first archiver report whose end holds it (polled every 100 ms). The table
//     gives p50, p99 and the maximum, and p99 over the interval (the goal: at most 2).
//
// Usage: go run ./test/bench/pitr -size-mb 256   (or make bench-pitr)
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/bench/benchutil"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

const myCnf = "[mysqld]\nlog_bin = binlog\nlog_slave_updates = ON\ngtid_strict_mode = ON\nbinlog_format = ROW\nskip_name_resolve = ON\nskip_slave_start = ON\nread_only = OFF\ninnodb_buffer_pool_size = 256M\ninnodb_log_file_size = 256M\ninnodb_flush_log_at_trx_commit = 2\nsync_binlog = 0\nmax_allowed_packet = 64M\nmax_binlog_size = 32M\n"

const prefix = "bench/binlog"

func main() {
	sizeMB := flag.Int("size-mb", 256, "binary logs to write and replay, in MiB")
	interval := flag.Duration("interval", 5*time.Second, "archive interval of the lag measurement")
	rate := flag.Int("rate", 200, "transactions per second of the lag measurement's writer")
	lagFor := flag.Duration("lag-seconds", time.Minute, "how long the lag measurement writes")
	flag.Parse()
	err := benchutil.Run(func(t *benchutil.T) error { return run(t, int64(*sizeMB)<<20, *interval, *rate, *lagFor) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func open(s *mariadb.Server) (*sql.DB, error) {
	// The helpers' connections time out after 3 s; filling and checksumming take longer.
	return mysql.Open(mysql.ConnConfig{Addr: s.Addr(), User: mariadb.AdminUser, Password: mariadb.AdminPassword, Timeout: time.Hour})
}

func run(t *benchutil.T, size int64, interval time.Duration, rate int, lagFor time.Duration) error {
	ctx := context.Background()
	gw := s3.Start(t)
	store, err := storage.New(gw.Config(""))
	if err != nil {
		return err
	}
	servers := mariadb.Start(t, 3, mariadb.Options{MyCnf: myCnf})
	src, viaAgent, byHand := servers[0], servers[1], servers[2]
	db, err := open(src)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range []*mariadb.Server{viaAgent, byHand} {
		// Both replay the source's history from the start: an empty GTID state.
		if err := s.Admin().ExecSQL(ctx, "RESET MASTER"); err != nil {
			return err
		}
	}

	// The replays start after the test accounts' creation, which both targets hold already.
	var startPos string
	if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&startPos); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "writing %d MiB of binary logs ...\n", size>>20)
	start := time.Now()
	if err := write(ctx, db, size); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		return err
	}
	arch := &archive.Archiver{In: &mysql.Instance{DB: db, Flavor: mysql.MariaDB}, Dir: filepath.Join(src.Dir, "data"), Store: store, Prefix: prefix, Interval: time.Hour}
	if _, err := arch.Round(ctx); err != nil {
		return err
	}
	ix, err := arch.LoadIndex(ctx)
	if err != nil {
		return err
	}
	var binlogBytes int64
	var txns int
	var objects, files []string
	dir := t.TempDir()
	for _, e := range ix.Entries {
		binlogBytes += e.Size
		txns += e.Transactions
		objects = append(objects, prefix+"/"+e.Object)
		// The hand-run pipeline's copy, on local disk (not timed).
		file := filepath.Join(dir, strings.ReplaceAll(e.Object, "/", "-"))
		if err := download(ctx, store, prefix+"/"+e.Object, file); err != nil {
			return err
		}
		files = append(files, file)
	}
	fmt.Fprintf(os.Stderr, "wrote and archived %d MiB in %d files, %d transactions, in %v\n", binlogBytes>>20, len(files), txns, time.Since(start).Round(time.Second))
	want, err := checksum(ctx, db)
	if err != nil {
		return err
	}

	// Through the agent.
	tools := mariadb.Toolbox(t)
	srv := agent.NewServer(viaAgent.Admin(), "bench-token")
	srv.EnableBackups(ctx, agent.BackupConfig{Flavor: mysql.MariaDB, Socket: viaAgent.Socket, DataDir: filepath.Join(viaAgent.Dir, "data"),
		User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir(), Tools: tools})
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	client := &agentapi.Client{BaseURL: api.URL, Token: "bench-token"}
	fmt.Fprintln(os.Stderr, "replaying through the agent ...")
	start = time.Now()
	req := agentapi.BackupRequest{ID: "replay", Method: agentapi.MethodReplay, Storage: gw.AgentConfig(""),
		Replay: &agentapi.ReplayRequest{Objects: objects, Start: startPos}}
	if _, err := client.StartRestore(ctx, req); err != nil {
		return err
	}
	var st *agentapi.BackupState
	for {
		if st, err = client.Restore(ctx, "replay"); err != nil {
			return err
		}
		if st.Phase != agentapi.BackupRunning {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	agentTook := time.Since(start)
	if st.Phase != agentapi.BackupComplete {
		return fmt.Errorf("replay through the agent: %s", st.Error)
	}
	if err := sameAs(ctx, viaAgent, want, "the agent's replay"); err != nil {
		return err
	}

	// By hand: mariadb-binlog on the local files, into the client.
	fmt.Fprintln(os.Stderr, "replaying by hand ...")
	start = time.Now()
	if err := byHandPipeline(files, startPos, byHand); err != nil {
		return err
	}
	handTook := time.Since(start)
	if err := sameAs(ctx, byHand, want, "the hand-run replay"); err != nil {
		return err
	}

	mib := float64(binlogBytes) / (1 << 20)
	fmt.Printf("\n| replay of %d MiB of binary logs (%d files, %d transactions) | time | MiB/s | transactions/s | time / by hand |\n|---|---|---|---|---|\n", binlogBytes>>20, len(files), txns)
	fmt.Printf("| through the agent (S3, cut in Go, mariadb-binlog, client) | %v | %.1f | %.0f | %.2f |\n", agentTook.Round(100*time.Millisecond),
		mib/agentTook.Seconds(), float64(st.Transactions)/agentTook.Seconds(), agentTook.Seconds()/handTook.Seconds())
	fmt.Printf("| `mariadb-binlog --start-position files... \\| mariadb`, local files, by hand | %v | %.1f | %.0f | 1.00 |\n", handTook.Round(100*time.Millisecond),
		mib/handTook.Seconds(), float64(st.Transactions)/handTook.Seconds())
	fmt.Printf("\nreplay through the agent: %d transactions applied, throughput %.2fx the hand-run pipeline (goal: at least 0.9x)\n",
		st.Transactions, handTook.Seconds()/agentTook.Seconds())

	return lag(ctx, t, src, db, store, gw, interval, rate, lagFor)
}

// write commits transactions of 8 rows of ~900 bytes on 4 connections until the binary logs
// hold size bytes.
func write(ctx context.Context, db *sql.DB, size int64) error {
	if _, err := db.ExecContext(ctx, "CREATE DATABASE bench"); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE bench.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, at DATETIME(6), b VARCHAR(1024))"); err != nil {
		return err
	}
	hex := "CONCAT(" + strings.TrimSuffix(strings.Repeat("MD5(RAND()),", 28), ",") + ")"
	stmt := "INSERT INTO bench.t (at, b) VALUES " + strings.TrimSuffix(strings.Repeat("(NOW(6), "+hex+"),", 8), ",")
	per := int64(8 * 1000) // bytes of binary log per transaction, about
	n := size / per
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(w); i < n; i += 4 {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func download(ctx context.Context, store *storage.Store, object, file string) error {
	r, err := store.Get(ctx, object)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func checksum(ctx context.Context, db *sql.DB) (int64, error) {
	var name string
	var sum int64
	err := db.QueryRowContext(ctx, "CHECKSUM TABLE bench.t").Scan(&name, &sum)
	return sum, err
}

func sameAs(ctx context.Context, s *mariadb.Server, want int64, what string) error {
	db, err := open(s)
	if err != nil {
		return err
	}
	defer db.Close()
	got, err := checksum(ctx, db)
	if err == nil && got != want {
		err = fmt.Errorf("%s: table checksum %d, the source's %d", what, got, want)
	}
	return err
}

// byHandPipeline runs mariadb-binlog on files into the client, as a DBA would.
func byHandPipeline(files []string, start string, into *mariadb.Server) error {
	args := files
	if start != "" {
		args = append([]string{"--start-position=" + start}, files...)
	}
	binlog := exec.Command("mariadb-binlog", args...)
	client := exec.Command("mariadb", "--no-defaults", "--socket="+into.Socket, "--user=root", "--binary-mode", "--batch")
	pipe, err := binlog.StdoutPipe()
	if err != nil {
		return err
	}
	var binErr, clientErr strings.Builder
	binlog.Stderr, client.Stdin, client.Stderr = &binErr, pipe, &clientErr
	if err := client.Start(); err != nil {
		return err
	}
	if err := binlog.Run(); err != nil {
		_ = client.Wait()
		return fmt.Errorf("mariadb-binlog: %w: %s", err, binErr.String())
	}
	if err := client.Wait(); err != nil {
		return fmt.Errorf("mariadb: %w: %s", err, clientErr.String())
	}
	return nil
}

// lag measures the archive lag under a steady writer through the agent's archive API.
func lag(ctx context.Context, t *benchutil.T, src *mariadb.Server, db *sql.DB, store *storage.Store, gw *s3.Server, interval time.Duration, rate int, lagFor time.Duration) error {
	srv := agent.NewServer(src.Admin(), "bench-token")
	srv.EnableBackups(ctx, agent.BackupConfig{Flavor: mysql.MariaDB, Socket: src.Socket, DataDir: filepath.Join(src.Dir, "data"),
		User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir()})
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	client := &agentapi.Client{BaseURL: api.URL, Token: "bench-token"}
	if _, err := client.ConfigureArchive(ctx, agentapi.ArchiveRequest{Storage: gw.AgentConfig(""), Prefix: "bench/lag", IntervalSeconds: int64(interval.Seconds())}); err != nil {
		return err
	}
	defer client.StopArchive(ctx)
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Fprintf(os.Stderr, "archive lag: %d transactions/s for %v, interval %v ...\n", rate, lagFor, interval)

	type commit struct {
		seq uint64
		at  time.Time
	}
	var mu sync.Mutex
	var commits []commit
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		deadline := time.Now().Add(lagFor)
		for time.Now().Before(deadline) {
			<-tick.C
			if _, err := conn.ExecContext(ctx, "INSERT INTO bench.t (at, b) VALUES (NOW(6), 'lag')"); err != nil {
				done <- err
				return
			}
			at := time.Now()
			var gtid string
			if err := conn.QueryRowContext(ctx, "SELECT @@last_gtid").Scan(&gtid); err != nil {
				done <- err
				return
			}
			var domain, server uint64
			var seq uint64
			if _, err := fmt.Sscanf(gtid, "%d-%d-%d", &domain, &server, &seq); err != nil {
				done <- fmt.Errorf("last_gtid %q: %w", gtid, err)
				return
			}
			mu.Lock()
			commits = append(commits, commit{seq, at})
			mu.Unlock()
		}
		done <- nil
	}()

	var lags []time.Duration
	next := 0
	var writeErr error
	writing := true
	for {
		if writing {
			select {
			case writeErr = <-done:
				writing = false
				if writeErr != nil {
					return writeErr
				}
			default:
			}
		}
		st, err := client.Archive(ctx)
		if err != nil {
			return err
		}
		now := time.Now()
		var end uint64
		if pos, err := mysql.ParseMariaDBPosition(st.End); err == nil {
			end = pos[0].Seq
		}
		mu.Lock()
		for next < len(commits) && commits[next].seq <= end {
			lags = append(lags, now.Sub(commits[next].at))
			next++
		}
		all := next == len(commits)
		mu.Unlock()
		if !writing && all {
			break
		}
		if !writing && time.Since(now) > 0 && len(lags) > 0 && now.Sub(commits[len(commits)-1].at) > 10*interval {
			return fmt.Errorf("transactions not archived %v after the last commit", 10*interval)
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(lags)
	q := func(p float64) time.Duration { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	fmt.Printf("\n| archive interval | writer | transactions | lag p50 | lag p99 | lag max | p99 / interval |\n|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %v | %d/s for %v | %d | %v | %v | %v | %.2f |\n", interval, rate, lagFor, len(lags), q(0.5).Round(10*time.Millisecond),
		q(0.99).Round(10*time.Millisecond), lags[len(lags)-1].Round(10*time.Millisecond), q(0.99).Seconds()/interval.Seconds())
	return nil
}
