// Command backup measures backups and restores of about 1 GB on a real MariaDB server to a real
// S3 server (versitygw from _output/bin), with the agent's own code in this process. It fills
// one InnoDB table to the requested size with rows of random hex (so that compression has
// work but not everything compresses away), then runs a logical and a physical backup (the
// executor and storage packages), and restores each into a second server through the agent's
// API: the logical one verified and loaded through the client, the physical one verified,
// unpacked and prepared beside the datadir, committed, and put in place by init's step
// between a stop and a start of the server. Each is compared with the raw tool on the same
// data and a local file: the backup tool writing uncompressed to a file; the client reading
// the uncompressed dump from a file; mbstream extracting the uncompressed stream from a file
// plus mariadb-backup --prepare. With -zstd-floor (the default) the raw tools also run with the
// zstd command line tool in their pipe (zstd -1 on every core into a file; zstd -dc into
// mbstream): the least a compressed backup or physical restore costs on this machine with the
// reference tools and no transfer. It prints a table: data size, stored (compressed) size,
// time, throughput over the data size, the raw tool's time and the ratio, the same for the
// zstd floor, and peak memory:
// the process's RSS high-water mark (the agent's side: compression, transfer and HTTP) and the
// tools' own maximum RSS (for restores, the raw baseline's run of the same tools). The tools
// run through a toolbox in a process of its own on a unix socket, as in a pod, and the raw
// tools from a small process of their own (child.go).
//
// With -repeat N each operation and its raw tool run N times, one after the other, and the
// table shows the median times (and their ratio) and the mean CPU; the samples follow it.
//
// Usage: go run ./test/bench/backup -size-mb 1024 [-methods logical,physical] [-repeat N] [-zstd-floor=false] [-cpuprofile file]   (or make bench-backup)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
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
	// cpu and rawCPU are the machine's busy CPU seconds during the operation and the raw
	// tool's run (/proc/stat: every process, the servers and the S3 server included).
	cpu, rawCPU float64
	// samples are every run's time and the raw tool's, with -repeat.
	samples, rawSamples []time.Duration
	// floor is the median time of the raw tools with the zstd command line tool in the pipe
	// (0 when not measured), floorSamples every run's.
	floor        time.Duration
	floorSamples []time.Duration
}

// runs collects the samples of one operation and makes its row of medians.
type runs struct {
	took, raw, floor []time.Duration
	cpu, rawCPU      float64
}

func (r *runs) add(took, raw time.Duration, cpu, rawCPU float64) {
	r.took, r.raw = append(r.took, took), append(r.raw, raw)
	r.cpu, r.rawCPU = r.cpu+cpu, r.rawCPU+rawCPU
}

// row is the operation's row: median times, mean CPU.
func (r *runs) row(what string, data, stored int64, rssMiB, toolRSSMB float64) row {
	n := float64(len(r.took))
	return row{what: what, data: data, stored: stored, took: median(r.took), raw: median(r.raw), rssMiB: rssMiB, toolRSSMB: toolRSSMB,
		cpu: r.cpu / n, rawCPU: r.rawCPU / n, samples: r.took, rawSamples: r.raw,
		floor: median(r.floor), floorSamples: r.floor}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func main() {
	runChild()
	sizeMB := flag.Int("size-mb", 1024, "approximate size of the table to back up, in MiB")
	methodList := flag.String("methods", "logical,physical", "comma-separated backup methods to measure (backup and restore of each)")
	repeat := flag.Int("repeat", 1, "measure each operation and its raw tool this many times, alternately; the table shows medians")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (the agent's side) over the whole run to this file")
	zstdFloor := flag.Bool("zstd-floor", true, "also time the raw tools with the zstd command line tool (-1, every core) in their pipe: the least a compressed backup or physical restore costs with the reference tools")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	methods := map[string]bool{}
	for _, m := range strings.Split(*methodList, ",") {
		m = strings.TrimSpace(m)
		if m != executor.Logical && m != executor.Physical {
			fmt.Fprintf(os.Stderr, "-methods: %q is neither %s nor %s\n", m, executor.Logical, executor.Physical)
			os.Exit(2)
		}
		methods[m] = true
	}
	if *repeat < 1 {
		fmt.Fprintln(os.Stderr, "-repeat must be at least 1")
		os.Exit(2)
	}
	zstdCmd := ""
	if *zstdFloor {
		var err error
		if zstdCmd, err = exec.LookPath("zstd"); err != nil {
			fmt.Fprintln(os.Stderr, "-zstd-floor needs the zstd command line tool (apt-get install zstd), or -zstd-floor=false:", err)
			os.Exit(2)
		}
	}
	err := benchutil.Run(func(t *benchutil.T) error { return run(t, int64(*sizeMB)<<20, methods, *repeat, zstdCmd) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run measures; zstdCmd is the zstd command line tool for the floor column, "" for none.
func run(t *benchutil.T, size int64, methods map[string]bool, repeat int, zstdCmd string) error {
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
	start = time.Now()
	if err := flushDirtyPages(ctx, src); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "the fill's dirty pages written back in %v\n", time.Since(start).Round(100*time.Millisecond))
	store, err := storage.New(gw.Config("bench"))
	if err != nil {
		return err
	}
	var rows []row
	rawFiles := map[string]string{}
	stored := map[string]executor.Result{}
	// The tools run through a toolbox in a process of its own, as in a pod (child.go).
	tools, err := startToolbox(t)
	if err != nil {
		return err
	}
	for _, method := range []string{executor.Logical, executor.Physical} {
		if !methods[method] {
			continue
		}
		req := executor.Request{Flavor: mysql.MariaDB, Method: method, Socket: servers[0].Socket, DataDir: filepath.Join(servers[0].Dir, "data"),
			User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir(), Tools: tools}
		rawFiles[method] = filepath.Join(t.TempDir(), "raw")
		var r runs
		var res executor.Result
		resetPeak()
		for range repeat {
			raw, err := rawTool(ctx, req, rawFiles[method], "")
			if err != nil {
				return err
			}
			if zstdCmd != "" {
				floor, err := rawTool(ctx, req, rawFiles[method]+".zst", zstdCmd)
				if err != nil {
					return err
				}
				r.floor = append(r.floor, floor.took)
			}
			settle()
			start, cpu := time.Now(), busyCPU()
			res, err = executor.Run(ctx, req, func(r io.Reader) error { _, err := store.Put(ctx, method, r); return err })
			if err != nil {
				return err
			}
			r.add(time.Since(start), raw.took, busyCPU()-cpu, raw.cpu)
		}
		stored[method] = res
		rows = append(rows, r.row(method+" backup", data, res.Size, peakRSSMiB(), float64(res.ToolMaxRSS)/(1<<20)))
	}

	want, err := rowCount(servers[0])
	if err != nil {
		return err
	}
	restored := func(what string) error {
		n, err := rowCount(servers[1])
		if err == nil && n != want {
			err = fmt.Errorf("%s holds %d rows, the source %d", what, n, want)
		}
		return err
	}

	// The restores run through the agent of the second server, as in a pod.
	dst := servers[1]
	srv := agent.NewServer(dst.Admin(), "bench-token")
	srv.EnableBackups(ctx, agent.BackupConfig{Flavor: mysql.MariaDB, Socket: dst.Socket, DataDir: filepath.Join(dst.Dir, "data"),
		User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir(), Tools: tools})
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	client := &agentapi.Client{BaseURL: api.URL, Token: "bench-token"}
	restoreReq := func(method string, i int) agentapi.BackupRequest {
		return agentapi.BackupRequest{ID: fmt.Sprintf("%s-restore-%d", method, i), Method: method, Object: method, SHA256: stored[method].SHA256, Storage: gw.AgentConfig("bench")}
	}

	// The physical restore's two parts: staging, and init's step.
	var staged, putInPlace, rawExtract, rawPrepare time.Duration
	if methods[executor.Logical] {
		// Logical: the client reading the dump from a file, then the agent, each into an empty schema.
		fmt.Fprintln(os.Stderr, "logical restores ...")
		var r runs
		var rawRSS float64
		var st *agentapi.BackupState
		resetPeak()
		for i := range repeat {
			settle()
			cpu := busyCPU()
			raw, rss, err := runFrom(rawFiles[executor.Logical], "mariadb", "--no-defaults", "--socket="+dst.Socket, "--user=root", "--binary-mode", "--batch")
			rawCPU := busyCPU() - cpu
			if err != nil {
				return err
			}
			rawRSS = max(rawRSS, rss)
			if err := restored("the raw logical restore"); err != nil {
				return err
			}
			if err := dst.Admin().ExecSQL(ctx, "DROP DATABASE bench"); err != nil {
				return err
			}
			settle()
			start, cpu := time.Now(), busyCPU()
			st, err = runRestore(ctx, client, restoreReq(executor.Logical, i), agentapi.BackupComplete)
			if err != nil {
				return err
			}
			r.add(time.Since(start), raw, busyCPU()-cpu, rawCPU)
			if err := restored("the logical restore"); err != nil {
				return err
			}
			if i < repeat-1 {
				if err := dst.Admin().ExecSQL(ctx, "DROP DATABASE bench"); err != nil {
					return err
				}
			}
		}
		rows = append(rows, r.row("logical restore", data, st.Size, peakRSSMiB(), rawRSS))
	}

	if methods[executor.Physical] {
		// Physical: mbstream and prepare from a file, then the agent's stage, commit and init's step.
		fmt.Fprintln(os.Stderr, "physical restores ...")
		var r runs
		var toolRSS float64
		var st *agentapi.BackupState
		var stagedRuns, putInPlaceRuns, extractRuns, prepareRuns []time.Duration
		resetPeak()
		for i := range repeat {
			dir := t.TempDir()
			settle()
			cpu := busyCPU()
			extract, extractRSS, err := runFrom(rawFiles[executor.Physical], "mbstream", "-x", "-C", dir)
			if err != nil {
				return err
			}
			prepStart := time.Now()
			prep, err := executor.Prepare(ctx, tools, mysql.MariaDB, dir, 0)
			if err != nil {
				return err
			}
			raw := extract + time.Since(prepStart)
			extractRuns, prepareRuns = append(extractRuns, extract), append(prepareRuns, raw-extract)
			rawCPU := busyCPU() - cpu
			toolRSS = max(toolRSS, extractRSS, float64(prep.ToolMaxRSS)/(1<<20))
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			if zstdCmd != "" {
				floor, err := rawUnpack(ctx, rawFiles[executor.Physical]+".zst", zstdCmd, t.TempDir())
				if err != nil {
					return err
				}
				r.floor = append(r.floor, floor)
			}
			settle()
			start, cpu := time.Now(), busyCPU()
			req := restoreReq(executor.Physical, i)
			st, err = runRestore(ctx, client, req, agentapi.RestoreStaged)
			if err != nil {
				return err
			}
			staged := time.Since(start)
			if _, err := client.CommitRestore(ctx, req.ID); err != nil {
				return err
			}
			if err := dst.RestartOnRestore(ctx, "bench-root", 10*time.Minute); err != nil {
				return err
			}
			took := time.Since(start)
			r.add(took, raw, busyCPU()-cpu, rawCPU)
			stagedRuns, putInPlaceRuns = append(stagedRuns, staged), append(putInPlaceRuns, took-staged)
			if err := restored("the physical restore"); err != nil {
				return err
			}
			// As a pod's agent does once the server runs: else the next restore's init
			// step would delete this one's old datadir, which init leaves aside.
			if err := agent.RemoveReplacedDatadir(ctx, dst.DataDir()); err != nil {
				return err
			}
		}
		staged, putInPlace = median(stagedRuns), median(putInPlaceRuns)
		rawExtract, rawPrepare = median(extractRuns), median(prepareRuns)
		rows = append(rows, r.row("physical restore", data, st.Size, peakRSSMiB(), toolRSS))
	}

	fmt.Printf("\n| operation | table data | stored (zstd) | time | throughput | raw tool with a local file | time / raw | raw tool and zstd -1 | time / that | CPU s / GiB (raw) | Go process peak RSS | tool max RSS |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		gib := float64(r.data) / (1 << 30)
		floor, floorRatio := "", ""
		if r.floor > 0 {
			floor, floorRatio = r.floor.Round(100*time.Millisecond).String(), fmt.Sprintf("%.2f", r.took.Seconds()/r.floor.Seconds())
		}
		fmt.Printf("| %s | %d MiB | %d MiB | %v | %.0f MiB/s | %v | %.2f | %s | %s | %.1f (%.1f) | %.0f MiB | %.0f MiB |\n", r.what, r.data>>20, r.stored>>20,
			r.took.Round(100*time.Millisecond), float64(r.data)/(1<<20)/r.took.Seconds(), r.raw.Round(100*time.Millisecond),
			r.took.Seconds()/r.raw.Seconds(), floor, floorRatio, r.cpu/gib, r.rawCPU/gib, r.rssMiB, r.toolRSSMB)
	}
	if repeat > 1 {
		fmt.Printf("\nsamples (time, raw tool[, raw tool and zstd -1]):\n")
		for _, r := range rows {
			var b strings.Builder
			for i := range r.samples {
				fmt.Fprintf(&b, " %v (%v", r.samples[i].Round(100*time.Millisecond), r.rawSamples[i].Round(100*time.Millisecond))
				if i < len(r.floorSamples) {
					fmt.Fprintf(&b, ", %v", r.floorSamples[i].Round(100*time.Millisecond))
				}
				b.WriteString(")")
			}
			fmt.Printf("- %s:%s\n", r.what, b.String())
		}
	}
	fmt.Printf("\nrows restored: %d, by each restore\n", want)
	if methods[executor.Physical] {
		fmt.Printf("physical restore: staged (verify, download, unpack, prepare) in %v, put in place by init (server stop, reset, swap, start) in %v; the raw tools: unpack %v, prepare %v\n",
			staged.Round(100*time.Millisecond), putInPlace.Round(100*time.Millisecond), rawExtract.Round(100*time.Millisecond), rawPrepare.Round(100*time.Millisecond))
	}
	return nil
}

// runRestore starts a restore through the agent and waits until it reaches done.
func runRestore(ctx context.Context, c *agentapi.Client, req agentapi.BackupRequest, done string) (*agentapi.BackupState, error) {
	if _, err := c.StartRestore(ctx, req); err != nil {
		return nil, err
	}
	for {
		st, err := c.Restore(ctx, req.ID)
		switch {
		case err != nil:
			return nil, err
		case st.Phase == agentapi.BackupFailed:
			return nil, fmt.Errorf("restore %s: %s", req.ID, st.Error)
		case st.Phase == done:
			return st, nil
		}
		// Often enough to add little to the times measured.
		time.Sleep(20 * time.Millisecond)
	}
}

// rowCount counts the filled table's rows on s, with a fresh connection: the helper's pools
// time out after 3 s.
func rowCount(s *mariadb.Server) (int64, error) {
	db, err := mysql.Open(mysql.ConnConfig{Addr: s.Addr(), User: mariadb.AdminUser, Password: mariadb.AdminPassword, Timeout: time.Hour})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	if err := db.QueryRow("SELECT COUNT(*) FROM bench.t").Scan(&n); err != nil {
		return 0, fmt.Errorf("count rows: %w", err)
	}
	return n, nil
}

// settle writes every dirty page back before a timed run, so that no run pays for the
// writeback of the one before (the restores write 1-2 GiB each, left to the kernel) and each
// starts from the same state.
func settle() { syscall.Sync() }

// rawRun is a raw tool's run: its time and the machine's busy CPU seconds meanwhile.
type rawRun struct {
	took time.Duration
	cpu  float64
}

// rawTool runs the executor's backup command alone, its output to file (replaced), and returns
// how long it took. Without zstdCmd the output is not compressed: the baseline of the table's
// ratio, and the restores' baseline reads the file. With it, the output goes through zstd -1 on
// every core (zstdCmd) into the file: the floor column, what a compressed backup costs with the
// reference tools and no transfer.
func rawTool(ctx context.Context, req executor.Request, file, zstdCmd string) (rawRun, error) {
	cmd, cleanup, err := executor.BackupCommand(ctx, req)
	if err != nil {
		return rawRun{}, err
	}
	defer cleanup()
	out, err := os.Create(file)
	if err != nil {
		return rawRun{}, err
	}
	defer out.Close()
	cmds := []*exec.Cmd{cmd}
	if zstdCmd != "" {
		cmds = append(cmds, exec.CommandContext(ctx, zstdCmd, "-1", "-T0", "-q", "-c"))
	}
	cmds[len(cmds)-1].Stdout = out
	settle()
	start, cpu := time.Now(), busyCPU()
	if err := runPipeline(cmds...); err != nil {
		return rawRun{}, err
	}
	return rawRun{took: time.Since(start), cpu: busyCPU() - cpu}, nil
}

// rawUnpack is the physical restore's floor: zstd -dc of file (the floor's compressed backup)
// into mbstream -x, then mariadb-backup --prepare, into dir, which it removes after. It returns
// the time of the two.
func rawUnpack(ctx context.Context, file, zstdCmd, dir string) (time.Duration, error) {
	z := exec.CommandContext(ctx, zstdCmd, "-dc", "-q", file)
	x := exec.CommandContext(ctx, "mbstream", "-x", "-C", dir)
	settle()
	start := time.Now()
	if err := runPipeline(z, x); err != nil {
		return 0, err
	}
	if _, err := executor.Prepare(ctx, nil, mysql.MariaDB, dir, 0); err != nil {
		return 0, err
	}
	took := time.Since(start)
	return took, os.RemoveAll(dir)
}

// runPipeline runs cmds with each one's standard output the next one's standard input, and
// waits for all of them. A command that fails is named in the error with its standard error
// (each has its own buffer: os/exec writes each from a goroutine of its own).
func runPipeline(cmds ...*exec.Cmd) error {
	stderrs := make([]strings.Builder, len(cmds))
	for i, c := range cmds {
		c.Stderr = &stderrs[i]
	}
	var closeAfterStart []io.Closer
	for i := range len(cmds) - 1 {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		cmds[i].Stdout, cmds[i+1].Stdin = w, r
		closeAfterStart = append(closeAfterStart, r, w)
	}
	var errs []error
	started := cmds[:0:0]
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			errs = append(errs, err)
			break
		}
		started = append(started, c)
	}
	// This process's copies of the pipe ends go, so that each reader sees the end of its input.
	for _, c := range closeAfterStart {
		c.Close()
	}
	for i, c := range started {
		if err := c.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w: %s", filepath.Base(c.Path), err, stderrs[i].String()))
		}
	}
	return errors.Join(errs...)
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

// flushDirtyPages waits until InnoDB has written back every page the fill left dirty. Until
// then its page cleaners compete with the first timed runs for the disk and the CPU: a run of
// the physical method alone, which starts with the raw tool right after the fill, measured it
// at 4.5 s instead of 1.2 s.
//
// The page cleaners are let loose meanwhile: at the default I/O capacity (200 pages a second)
// they took 15 s for a 64 MiB fill.
func flushDirtyPages(ctx context.Context, in *mysql.Instance) error {
	var pct, capacity, capacityMax string
	err := in.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max").
		Scan(&pct, &capacity, &capacityMax)
	if err != nil {
		return fmt.Errorf("read the page cleaners' settings: %w", err)
	}
	if err := in.ExecSQL(ctx, "SET GLOBAL innodb_io_capacity_max = 100000", "SET GLOBAL innodb_io_capacity = 100000",
		"SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Minute); ; {
		var name string
		var dirty int64
		if err := in.DB.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&name, &dirty); err != nil {
			return fmt.Errorf("read Innodb_buffer_pool_pages_dirty: %w", err)
		}
		if dirty == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d pages still dirty after 5 minutes", dirty)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := in.ExecSQL(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = "+pct, "SET GLOBAL innodb_io_capacity = "+capacity,
		"SET GLOBAL innodb_io_capacity_max = "+capacityMax); err != nil {
		return err
	}
	settle()
	return nil
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

// busyCPU is the machine's busy CPU time so far, in seconds: /proc/stat's user, nice, system,
// irq, softirq and steal ticks of all CPUs (USER_HZ is 100 on Linux).
func busyCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var ticks float64
	for i, v := range f[1:] {
		// user nice system idle iowait irq softirq steal: all but idle and iowait.
		if i == 3 || i == 4 || i > 7 {
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		ticks += n
	}
	return ticks / 100
}
