package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// Seeding: a member that starts with an empty datadir in a cluster that already holds data
// is filled with a physical copy of a peer (the donor) instead of an empty datadir. Replaying
// every transaction from the primary's binary logs cannot work once they no longer start at
// the beginning, which is the case after a physical restore (the logs restart at the backup's
// position) and after binary logs were purged; a copy is also faster for large data.
//
// The donor streams `mariadb-backup --backup` of itself (GET /api/v1/seed); init unpacks and
// prepares it beside the datadir and puts it in place exactly as a committed physical restore
// (this cluster's accounts, replication forgotten, GTID state at the copy's position), so the
// member then replicates from the primary from that position on.

// ClusterHoldsData reads the operator's record at path: true when the file says "true", false
// when it is absent.
func ClusterHoldsData(path string) (bool, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)) == "true", nil
}

// seedErrorTrailer carries the donor's failure after a streamed copy: a copy cut short must
// never be taken for a whole one.
const seedErrorTrailer = "Mysqlop-Seed-Error"

// seed streams a compressed physical copy of this server (GET /api/v1/seed). It takes the
// slot of the agent's jobs, so it never runs beside a backup or a restore (409).
func (s *Server) seed(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	b := s.backups
	b.mu.Lock()
	if err := b.busy(); err != nil {
		b.mu.Unlock()
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	b.running = "seed"
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.running = ""
		b.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Trailer", seedErrorTrailer)
	w.WriteHeader(http.StatusOK)
	started := time.Now()
	ctx, stop := context.WithCancel(r.Context())
	released := make(chan int, 1)
	go func() { released <- releaseAckWaits(ctx, s.in) }()
	defer func() {
		stop()
		if n := <-released; n > 0 {
			klog.InfoS("Ended client connections whose commits waited for an acknowledgement during the copy", "connections", n)
		}
	}()
	res, err := executor.Run(ctx, executor.Request{
		Flavor: b.cfg.Flavor, Method: executor.Physical, Socket: b.cfg.Socket, DataDir: b.cfg.DataDir,
		User: b.cfg.User, Password: b.cfg.Password, TmpDir: b.cfg.TmpDir, Tools: b.cfg.Tools,
	}, func(rd io.Reader) error { _, err := io.Copy(w, rd); return err })
	if err != nil {
		w.Header().Set(seedErrorTrailer, strings.ReplaceAll(err.Error(), "\n", " "))
		klog.ErrorS(err, "Seeding a peer failed")
		return
	}
	klog.InfoS("Seeded a peer", "bytes", res.Size, "gtid", res.GTID, "duration", time.Since(started).Round(time.Millisecond))
}

// ackWaitLimit is how long a commit may wait for a semi-sync acknowledgement on a donor during
// a copy before its connection is ended.
const ackWaitLimit = time.Second

// releaseAckWaits ends, until ctx ends, the client connections whose commit has waited
// ackWaitLimit for a semi-sync acknowledgement, and returns how many it ended. A primary that
// donates a copy when no replica acknowledges (the member being seeded is the one that would)
// has commits waiting forever after their binlog sync, and mariadb-backup's BACKUP STAGE
// BLOCK_COMMIT waits for them: the copy and the commits would wait for each other. Ending
// them lets the copy finish. Their clients get an error though the commit is in the binary
// log (an ambiguous commit, as when a connection drops): nothing is lost, since the donor stays
// the primary and the copy, and then its replicas, hold it. On a replica donor nothing waits.
func releaseAckWaits(ctx context.Context, in *mysql.Instance) int {
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n
		case <-time.After(250 * time.Millisecond):
		}
		k, _ := in.KillAckWaiters(ctx, ackWaitLimit, mysql.OperatorUser)
		n += k
	}
}

// PeerAddresses returns the agent addresses (host:port) of the other members of podName's
// StatefulSet, named through the headless service: every lower ordinal, and the higher ones up
// to the first name that does not resolve (ordinals are dense).
func PeerAddresses(ctx context.Context, podName, service string, port int) ([]string, error) {
	ord, err := agentapi.Ordinal(podName)
	if err != nil {
		return nil, err
	}
	set := podName[:strings.LastIndexByte(podName, '-')]
	var out []string
	for i := 0; i < ord+64; i++ {
		if i == ord {
			continue
		}
		host := fmt.Sprintf("%s-%d.%s", set, i, service)
		if i > ord {
			if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
				break
			}
		}
		out = append(out, net.JoinHostPort(host, fmt.Sprint(port)))
	}
	return out, nil
}

// agentURL is the base URL of the agent at addr (host:port).
func (o InitOptions) agentURL(addr string) string {
	if o.AgentTLS != nil {
		return "https://" + addr
	}
	return "http://" + addr
}

// peer is what a peer's agent said about its server.
type peer struct {
	Addr string
	// Answered is false when nothing answered at that address (no pod, or no agent yet).
	Answered bool
	// Status is nil when the agent answered with an error (its server is down, say).
	Status *agentapi.StatusJSON
}

// chooseDonor picks the peer to copy: a ready replica first (a copy should not load the
// primary), the ready primary otherwise. seed is false when no peer is known to hold data
// (a new cluster: start empty); peers with data, or agents that answered without a status,
// but no ready donor, is an error to retry. Once the cluster has held data (holdsData, from the
// operator), a peer that does not answer may hold it too: only peers that answered with no
// data let the member start empty.
func chooseDonor(peers []peer, holdsData bool) (donor string, seed bool, err error) {
	var primary string
	withData, unknown := 0, 0
	for _, p := range peers {
		st := p.Status
		switch {
		case p.Answered && st == nil, !p.Answered && holdsData:
			unknown++
			continue
		case st == nil || st.Executed == "":
			continue
		}
		withData++
		switch {
		case st.Ready && st.Replica != nil && donor == "":
			donor = p.Addr
		case st.Ready && !st.ReadOnly && primary == "":
			primary = p.Addr
		}
	}
	if donor == "" {
		donor = primary
	}
	switch {
	case donor != "":
		return donor, true, nil
	case withData == 0 && unknown == 0:
		return "", false, nil
	}
	if withData == 0 && holdsData {
		// Every member lost its datadir at once, or the peers are all down: never an empty
		// member in a cluster that held data. Restoring a backup is the way out of the first.
		return "", true, fmt.Errorf("the cluster holds data but no peer that could hold it is ready to be copied (%d cannot tell)", unknown)
	}
	return "", true, fmt.Errorf("no peer is ready to be copied (%d hold data, %d cannot tell)", withData, unknown)
}

// seedFromPeers fills the empty datadir of a MariaDB member with a copy of a peer when the
// cluster holds data. It reports whether it did; false means the datadir is to be initialised
// empty. A donor is waited for up to o.Timeout; then init fails, and its retry asks again.
func seedFromPeers(ctx context.Context, o InitOptions, cnf string) (bool, error) {
	if o.Flavor != mysql.MariaDB || len(o.Peers) == 0 {
		return false, nil
	}
	logger := klog.FromContext(ctx)
	token, err := ReadCredential(o.CredentialsDir, FileAgentToken)
	if err != nil {
		return false, err
	}
	var donor string
	deadline := time.Now().Add(o.Timeout)
	for {
		peers := make([]peer, len(o.Peers))
		for i, addr := range o.Peers {
			c := &agentapi.Client{BaseURL: o.agentURL(addr), Token: token, HTTP: agentapi.HTTPClient(o.AgentTLS, 3*time.Second)}
			st, code, _ := c.Probe(ctx)
			peers[i] = peer{Addr: addr, Answered: code != 0, Status: st}
		}
		var seed bool
		donor, seed, err = chooseDonor(peers, o.ClusterHoldsData)
		if !seed {
			logger.Info("No peer holds data: initialising an empty datadir", "peers", len(peers))
			return false, nil
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("seed the datadir: %w", err)
		}
		logger.Info("Waiting for a donor", "reason", err.Error())
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("seed the datadir: %w (%v)", err, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
	logger.Info("Seeding the datadir from a peer", "donor", donor)
	started := time.Now()
	gtid, err := copyPeer(ctx, o, donor, token)
	if err != nil {
		return false, fmt.Errorf("seed from %s: %w", donor, err)
	}
	if err := writeRecord(stagedPath(o.DataDir), restoreRecord{ID: "seed from " + donor, GTID: gtid, Committed: true}); err != nil {
		return false, err
	}
	if err := ApplyStagedRestore(ctx, o, cnf); err != nil {
		return false, err
	}
	logger.Info("Seeded the datadir from a peer", "donor", donor, "gtid", gtid, "duration", time.Since(started).Round(time.Millisecond))
	return true, nil
}

// copyPeer streams the donor's copy into the staging directory and prepares it; it returns the
// copy's GTID position. Init runs in the server image, so the tools run here.
func copyPeer(ctx context.Context, o InitOptions, donor, token string) (string, error) {
	root := stagingDir(o.DataDir)
	if err := os.RemoveAll(root); err != nil {
		return "", fmt.Errorf("clear the staging directory: %w", err)
	}
	data := filepath.Join(root, "data")
	if err := os.MkdirAll(data, 0o750); err != nil {
		return "", fmt.Errorf("create the staging directory: %w", err)
	}
	// No timeout but ctx's: the copy takes as long as the data needs.
	c := &agentapi.Client{BaseURL: o.agentURL(donor), Token: token, HTTP: agentapi.HTTPClient(o.AgentTLS, 0)}
	resp, err := c.Seed(ctx)
	if err != nil {
		return "", fmt.Errorf("ask for a copy: %w", err)
	}
	defer resp.Body.Close()
	_, err = executor.Extract(ctx, nil, o.Flavor, resp.Body, data)
	// The trailer is only known once the body was read to its end.
	_, _ = io.Copy(io.Discard, resp.Body)
	if msg := resp.Trailer.Get(seedErrorTrailer); msg != "" {
		return "", fmt.Errorf("the donor failed: %s", msg)
	}
	if err != nil {
		return "", err
	}
	info, err := executor.ReadBackupInfo(data)
	if err != nil {
		return "", err
	}
	if info.GTID == "" {
		return "", errors.New("the copy records no GTID position")
	}
	if _, err := executor.Prepare(ctx, nil, o.Flavor, data, 0); err != nil {
		return "", err
	}
	return info.GTID, nil
}
