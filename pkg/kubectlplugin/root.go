// Package kubectlplugin is `kubectl mysqlop`: status, switchover, reseed, backup, restore,
// connect, credentials and logs for MySQLClusters, with kubectl's conventional flags. It acts
// only through the API objects the operator reads (annotations, MySQLBackup, MySQLRestore) and
// through kubectl for exec and logs; it never talks to mysqld itself.
package kubectlplugin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
)

// IO are the streams a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// env is what every command works with: the flags' clients and namespace.
type env struct {
	IO
	// kubeconfig and overrides are kubectl's own flags (--kubeconfig, --context, -n, ...).
	kubeconfig string
	overrides  clientcmd.ConfigOverrides
	output     string
	namespace  string
	kube       kubernetes.Interface
	mysql      versioned.Interface
	// kubectl is the kubectl binary exec and logs run ("kubectl" on PATH, as the plugin was
	// found there).
	kubectl string
}

// NewCommand is the root command, `kubectl mysqlop`.
func NewCommand(streams IO) *cobra.Command {
	e := &env{IO: streams, kubectl: "kubectl"}
	if k := os.Getenv("MYSQLOP_KUBECTL"); k != "" {
		e.kubectl = k
	}
	root := &cobra.Command{
		Use:           "mysqlop",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl mysqlop"},
		Short:         "Operate MySQLClusters run by mysqlop",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return e.init()
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.PersistentFlags().StringVar(&e.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// kubectl's --user (a kubeconfig user) is left out: --user names a MySQLUser here.
	names.ContextOverrideFlags.AuthInfoName.LongName = ""
	clientcmd.BindOverrideFlags(&e.overrides, root.PersistentFlags(), names)
	root.PersistentFlags().StringVarP(&e.output, "output", "o", "", "Output format: json or yaml (default: text for people)")
	root.AddCommand(statusCommand(e), switchoverCommand(e), reseedCommand(e), backupCommand(e), restoreCommand(e),
		connectCommand(e), credentialsCommand(e), logsCommand(e))
	return root
}

// Main runs the plugin with args and returns its exit code.
func Main(args []string, streams IO) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		var code exitCode
		if errors.As(err, &code) {
			return int(code)
		}
		fmt.Fprintln(streams.Err, "error:", err)
		return 1
	}
	return 0
}

func (e *env) init() error {
	switch e.output {
	case "", "json", "yaml":
	default:
		return fmt.Errorf("unknown output format %q: json or yaml", e.output)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = e.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &e.overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	if e.namespace, _, err = loader.Namespace(); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	e.mysql, err = versioned.NewForConfig(cfg)
	return err
}

// print writes v as -o asks: JSON, YAML, or text by the given function.
func (e *env) print(v any, text func(io.Writer) error) error {
	switch e.output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.Out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = e.Out.Write(b)
		return err
	}
	return text(e.Out)
}

// kubectlArgs are the global flags to hand a kubectl child, so that it talks to the same
// cluster, as the same user, in the same namespace.
func (e *env) kubectlArgs(args ...string) []string {
	var out []string
	add := func(flag, v string) {
		if v != "" {
			out = append(out, "--"+flag+"="+v)
		}
	}
	add("kubeconfig", e.kubeconfig)
	add("context", e.overrides.CurrentContext)
	add("cluster", e.overrides.Context.Cluster)
	add("server", e.overrides.ClusterInfo.Server)
	// --token is not handed on: in a child's argv it would be visible to every local user.
	out = append(out, "--namespace="+e.namespace)
	return append(out, args...)
}

// run runs kubectl with args on the command's streams (stdin: in, or the command's).
func (e *env) run(ctx context.Context, in io.Reader, args ...string) error {
	cmd := exec.CommandContext(ctx, e.kubectl, e.kubectlArgs(args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, e.Out, e.Err
	if in == nil {
		cmd.Stdin = e.In
	}
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return exitCode(ee.ExitCode())
	}
	return err
}

// confirm asks the person to type want; --yes answers for them.
func (e *env) confirm(yes bool, prompt, want string) error {
	if yes {
		return nil
	}
	fmt.Fprintf(e.Err, "%s\nType %q to go on: ", prompt, want)
	line, err := bufio.NewReader(e.In).ReadString('\n')
	if err != nil && line == "" {
		return fmt.Errorf("not confirmed (no answer; --yes confirms without asking)")
	}
	if strings.TrimSpace(line) != want {
		return fmt.Errorf("not confirmed: nothing was changed")
	}
	return nil
}

// exitCode is a child's exit code, passed on as the plugin's.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit code %d", int(c)) }

// waitFor polls cond every second until it holds, fails, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := cond(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %v", what, timeout)
		case <-time.After(time.Second):
		}
	}
}
