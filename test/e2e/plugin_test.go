package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/kubectlplugin"
	"github.com/mysqlop/mysql-operator/test/framework"
	"github.com/mysqlop/mysql-operator/test/localcluster"
)

// plugin runs `kubectl mysqlop args...` in the test namespace as a user would: kubectl finds
// kubectl-mysqlop (make build) on PATH, and the plugin runs kubectl from there for exec and
// logs. It returns stdout, stderr and the exit code.
func plugin(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	// KUBECONFIG, not --kubeconfig: kubectl takes no flag before a plugin's name.
	cmd := exec.CommandContext(ctx, filepath.Join(framework.BinDir(), "kubectl"), append([]string{"mysqlop", "-n", ns}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+framework.BinDir()+":"+os.Getenv("PATH"), "KUBECONFIG="+lc.CP.Kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	}
	t.Fatalf("kubectl mysqlop %v: %v", args, err)
	return "", "", 0
}

// pluginJourney: `kubectl mysqlop` on the real cluster: status at a glance (text and JSON),
// credentials without the password unless asked, connect as the application account through
// kubectl exec with the password never shown and its file gone afterwards, logs, a
// switchover under a writer that loses nothing, a re-seed refused without the confirmation
// and carried out with it (the replica's pod replaced, its rows back), and a backup refused
// without a storage to copy. It returns the primary after the switchover.
func pluginJourney(t *testing.T, primary string) string {
	ctx := context.Background()
	out, errOut, code := plugin(t, "", "status", name)
	if code != 0 || !strings.Contains(out, "Healthy, 3/3 members ready") || !regexp.MustCompile(`Primary:\s+`+primary+` `).MatchString(out) {
		t.Fatalf("status (exit %d):\n%s\n%s", code, out, errOut)
	}
	t.Logf("kubectl mysqlop status:\n%s", out)
	out, _, _ = plugin(t, "", "status", name, "-o", "json")
	var s kubectlplugin.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Primary != primary || len(s.Instances) != 3 || s.Instances[0].GTID == "" {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}

	out, _, code = plugin(t, "", "credentials", name, "--user", "app")
	if code != 0 || strings.Contains(out, appPassword) || !strings.Contains(out, name+"-primary."+ns+".svc:3306") {
		t.Errorf("credentials (exit %d) show the password or lack the address:\n%s", code, out)
	}
	out, _, _ = plugin(t, "", "credentials", name, "--user", "app", "--show-password", "-o", "json")
	var cr kubectlplugin.Credentials
	if err := json.Unmarshal([]byte(out), &cr); err != nil || cr.Password != appPassword || cr.User != "app" || cr.CASecret != name+"-ca" {
		t.Errorf("credentials --show-password -o json: %v %+v", err, cr)
	}

	// A client on the primary as the application account, over TLS (its MySQLUser requires it).
	out, errOut, code = plugin(t, "", "connect", name, "--user", "app", "--", "-N", "-e", "SELECT CURRENT_USER(), @@hostname, @@read_only; SHOW SESSION STATUS LIKE 'Ssl_version'")
	if code != 0 || !strings.Contains(out, "app@%\t"+primary+"\t0") || !strings.Contains(out, "TLS") {
		t.Fatalf("connect (exit %d):\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, appPassword) {
		t.Error("connect showed the password")
	}
	// Statements on stdin, as from a script; and the client's exit code comes back.
	if out, _, code = plugin(t, "SELECT COUNT(*) FROM app.t;\n", "connect", name, "--", "-N"); code != 0 || strings.TrimSpace(out) == "" {
		t.Errorf("connect with statements on stdin (exit %d): %q", code, out)
	}
	if _, _, code = plugin(t, "", "connect", name, "--", "-e", "SELECT * FROM no_such.table"); code == 0 {
		t.Error("a failing statement exited 0")
	}
	eventually(t, 30*time.Second, "the client's option files removed from the primary's /tmp", func(ctx context.Context) (bool, error) {
		out, err := lc.Kubectl(ctx, "exec", "-n", ns, primary, "-c", "mysqld", "--", "sh", "-c", "ls /tmp | grep -c mysqlop-connect || true")
		return err == nil && strings.TrimSpace(out) == "0", nil
	})

	if out, _, code = plugin(t, "", "logs", name, "--tail", "2"); code != 0 || strings.Count(strings.TrimRight(out, "\n"), "\n") != 1 {
		t.Errorf("logs --tail 2 (exit %d): %q", code, out)
	}

	if _, errOut, code = plugin(t, "", "backup", "now", name); code == 0 || !strings.Contains(errOut, "--like") {
		t.Errorf("backup now without a schedule (exit %d): %s", code, errOut)
	}

	// Switchover under a writer: no acknowledged write lost.
	target := otherThan(members(3), primary)[0]
	w := localcluster.StartWriter(memberDB, statusPrimary)
	time.Sleep(time.Second)
	_, errOut, code = plugin(t, "", "switchover", name, "--to", target)
	acked := w.Stop()
	if code != 0 || statusPrimary() != target {
		t.Fatalf("switchover to %s (exit %d): %s", target, code, errOut)
	}
	t.Logf("kubectl mysqlop switchover: %s", strings.TrimSpace(errOut))
	if lost := missing(t, target, acked); len(lost) > 0 {
		t.Fatalf("%d acknowledged writes lost in the switchover, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	waitServiceEndpoints(t, name+"-primary", target)
	primary = target

	// Re-seed: a wrong answer changes nothing; the right one replaces the replica's data.
	victim := otherThan(members(3), primary)[0]
	if _, errOut, code = plugin(t, "no\n", "reseed", name, victim); code == 0 || !strings.Contains(errOut, "not confirmed") {
		t.Fatalf("re-seed with a wrong confirmation (exit %d): %s", code, errOut)
	}
	if _, pending := cluster(t).Annotations[v1alpha1.AnnotationReseed]; pending {
		t.Fatal("an unconfirmed re-seed was requested")
	}
	if _, errOut, code = plugin(t, "", "reseed", name, primary, "--yes"); code == 0 || !strings.Contains(errOut, "is the primary") {
		t.Errorf("re-seed of the primary (exit %d): %s", code, errOut)
	}
	uid := pod(t, victim).UID
	n := rows(t, primary)
	started := time.Now()
	_, errOut, code = plugin(t, victim+"\n", "reseed", name, victim)
	if code != 0 {
		t.Fatalf("re-seed of %s (exit %d): %s", victim, code, errOut)
	}
	if pod(t, victim).UID == uid {
		t.Errorf("%s's pod was not replaced by the re-seed", victim)
	}
	waitRows(t, victim, n)
	evs, err := lc.CP.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=MemberReseeded"})
	requested := false
	for _, e := range evs.Items {
		requested = requested || strings.Contains(e.Message, "Re-seeding "+victim+" from a healthy peer as requested")
	}
	if err != nil || !requested {
		t.Errorf("no MemberReseeded event for the request: %v", err)
	}
	t.Logf("kubectl mysqlop reseed %s: ready with its %d rows after %v", victim, n, time.Since(started).Round(100*time.Millisecond))

	// kubectl describe tells the story: the conditions and the events of both actions.
	out, err = lc.Kubectl(ctx, "describe", "-n", ns, "mysqlcluster", name)
	for _, want := range []string{`Type:\s+Healthy`, `SwitchOver`, `MemberReseeded`, `Re-seeding ` + victim} {
		if err != nil || !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("kubectl describe lacks %q (%v):\n%s", want, err, out)
		}
	}
	return primary
}
