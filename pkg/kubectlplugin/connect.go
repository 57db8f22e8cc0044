package kubectlplugin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// findUser is the MySQLUser named name of cluster, or its only one when name is empty; a
// defaulted copy.
func findUser(users []v1alpha1.MySQLUser, cluster, name string) (*v1alpha1.MySQLUser, error) {
	var mine []*v1alpha1.MySQLUser
	for i := range users {
		if users[i].Spec.ClusterRef.Name == cluster {
			u := users[i].DeepCopy()
			v1alpha1.SetUserDefaults(u)
			mine = append(mine, u)
		}
	}
	if name != "" {
		for _, u := range mine {
			if u.Name == name {
				return u, nil
			}
		}
		return nil, fmt.Errorf("no MySQLUser %s of cluster %s", name, cluster)
	}
	switch len(mine) {
	case 0:
		return nil, fmt.Errorf("cluster %s has no MySQLUser: declare one (docs/users-and-databases.md)", cluster)
	case 1:
		return mine[0], nil
	}
	var names []string
	for _, u := range mine {
		names = append(names, u.Name)
	}
	slices.Sort(names)
	return nil, fmt.Errorf("cluster %s has several MySQLUsers (%s): choose one with --user", cluster, strings.Join(names, ", "))
}

// optionFile is a [client] option file for u with password; values are quoted and escaped as
// the clients' option file parser reads them.
func optionFile(user, password string) []byte {
	q := func(s string) string {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
	}
	return []byte("[client]\nuser=" + q(user) + "\npassword=" + q(password) + "\n")
}

// clientCommand is the client binary and its TLS option for the cluster's flavor, when the
// member serves TLS.
func clientCommand(c *v1alpha1.MySQLCluster, member string) []string {
	tlsOn := slices.ContainsFunc(c.Status.Instances, func(in v1alpha1.InstanceStatus) bool { return in.Name == member && in.TLS })
	if c.Spec.Flavor == v1alpha1.FlavorMariaDB {
		if tlsOn {
			return []string{"mariadb", "--ssl"}
		}
		return []string{"mariadb"}
	}
	if tlsOn {
		return []string{"mysql", "--ssl-mode=REQUIRED"}
	}
	return []string{"mysql", "--ssl-mode=DISABLED"}
}

// userPassword reads the MySQLUser's password from its Secret.
func (e *env) userPassword(ctx context.Context, u *v1alpha1.MySQLUser) (string, error) {
	ref := u.Spec.PasswordSecretRef
	s, err := e.kube.CoreV1().Secrets(e.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read the password of MySQLUser %s: %w", u.Name, err)
	}
	p, ok := s.Data[ref.Key]
	if !ok || len(p) == 0 {
		return "", fmt.Errorf("the password Secret %s has no key %q", ref.Name, ref.Key)
	}
	return string(p), nil
}

// clusterAndUser reads the cluster and the chosen MySQLUser of it.
func (e *env) clusterAndUser(ctx context.Context, cluster, user string) (*v1alpha1.MySQLCluster, *v1alpha1.MySQLUser, error) {
	c, err := e.mysql.MysqlopV1alpha1().MySQLClusters(e.namespace).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	users, err := e.mysql.MysqlopV1alpha1().MySQLUsers(e.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	u, err := findUser(users.Items, cluster, user)
	return c, u, err
}

func connectCommand(e *env) *cobra.Command {
	var user, member string
	cmd := &cobra.Command{
		Use:   "connect CLUSTER [--user MYSQLUSER] [--member POD] [-- CLIENT ARGS]",
		Short: "Open a MySQL client on the primary (or a member) through kubectl exec, as a MySQLUser; the password is never shown",
		Long: "connect reads the MySQLUser's password from its Secret and hands it to the client in an option file\n" +
			"written through kubectl exec's stdin into the member's private /tmp (mode 0600, removed a few seconds after the\n" +
			"client started): never in an argument list, an environment variable or the terminal.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, u, err := e.clusterAndUser(ctx, args[0], user)
			if err != nil {
				return err
			}
			if member == "" {
				if member = c.Status.Primary; member == "" {
					return fmt.Errorf("cluster %s has no primary now: name a member with --member", c.Name)
				}
			}
			password, err := e.userPassword(ctx, u)
			if err != nil {
				return err
			}
			// First exec: the option file, through stdin, into the container's own /tmp.
			var path bytes.Buffer
			write := e.capture(ctx, bytes.NewReader(optionFile(u.Spec.User, password)), &path,
				"exec", "-i", member, "-c", resources.ContainerMySQL, "--",
				"sh", "-c", `umask 077; f=$(mktemp /tmp/mysqlop-connect.XXXXXX) && cat > "$f" && echo "$f"`)
			if err := write; err != nil {
				return fmt.Errorf("write the client's option file in %s: %w", member, err)
			}
			file := strings.TrimSpace(path.String())
			// Second exec: the client, reading it first; the file goes once the client read it.
			execArgs := []string{"exec", "-i"}
			if f, ok := e.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				execArgs = append(execArgs, "-t")
			}
			client := clientCommand(c, member)
			script := `f=$1; c=$2; shift 2; (sleep 5; rm -f "$f") & exec "$c" --defaults-extra-file="$f" "$@"`
			execArgs = append(execArgs, member, "-c", resources.ContainerMySQL, "--", "sh", "-c", script, "connect", file, client[0])
			execArgs = append(execArgs, client[1:]...)
			execArgs = append(execArgs, "-h", "127.0.0.1", "-P", fmt.Sprint(resources.PortMySQL))
			execArgs = append(execArgs, args[1:]...)
			return e.run(ctx, nil, execArgs...)
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "MySQLUser to connect as (default: the cluster's only one)")
	cmd.Flags().StringVar(&member, "member", "", "Member pod to connect to (default: the primary)")
	return cmd
}

// capture runs kubectl with stdin in and stdout into out (stderr to the command's).
func (e *env) capture(ctx context.Context, in io.Reader, out io.Writer, args ...string) error {
	saved := e.Out
	e.Out = out
	defer func() { e.Out = saved }()
	return e.run(ctx, in, args...)
}

// Credentials is what `credentials` shows: where and as whom an application connects.
type Credentials struct {
	Primary  string `json:"primary"`
	Replicas string `json:"replicas"`
	Port     int    `json:"port"`
	User     string `json:"user"`
	// PasswordSecret is secret/key; Password is set only with --show-password.
	PasswordSecret string `json:"passwordSecret"`
	Password       string `json:"password,omitempty"`
	// CASecret is the Secret (key ca.crt) applications verify the servers with.
	CASecret   string `json:"caSecret,omitempty"`
	RequireTLS bool   `json:"requireTLS"`
}

func credentialsCommand(e *env) *cobra.Command {
	var user string
	var show bool
	cmd := &cobra.Command{
		Use:   "credentials CLUSTER [--user MYSQLUSER] [--show-password]",
		Short: "Where and as whom an application connects: Services, port, user, the password's Secret and the CA bundle",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, u, err := e.clusterAndUser(ctx, args[0], user)
			if err != nil {
				return err
			}
			cr := Credentials{
				Primary:        fmt.Sprintf("%s.%s.svc", resources.PrimaryServiceName(c), c.Namespace),
				Replicas:       fmt.Sprintf("%s.%s.svc", resources.ReplicasServiceName(c), c.Namespace),
				Port:           resources.PortMySQL,
				User:           u.Spec.User,
				PasswordSecret: u.Spec.PasswordSecretRef.Name + "/" + u.Spec.PasswordSecretRef.Key,
				RequireTLS:     u.Spec.RequireTLS || u.Spec.RequireSubject != "",
			}
			if c.Status.TLS != nil {
				cr.CASecret = resources.CASecretName(c)
			}
			if show {
				if cr.Password, err = e.userPassword(ctx, u); err != nil {
					return err
				}
			}
			return e.print(cr, func(w io.Writer) error {
				password := "(in Secret " + cr.PasswordSecret + "; --show-password prints it)"
				if show {
					password = cr.Password
				}
				fmt.Fprintf(w, "Primary (read-write):\t%s:%d\nReplicas (read-only):\t%s:%d\nUser:\t%s\nPassword:\t%s\n",
					cr.Primary, cr.Port, cr.Replicas, cr.Port, cr.User, password)
				if cr.CASecret != "" {
					fmt.Fprintf(w, "CA bundle:\tSecret %s, key ca.crt (verify the server's name: docs/tls.md)\n", cr.CASecret)
				}
				_, err := fmt.Fprintf(w, "TLS required:\t%t\n", cr.RequireTLS)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "MySQLUser (default: the cluster's only one)")
	cmd.Flags().BoolVar(&show, "show-password", false, "Print the password too")
	return cmd
}

func logsCommand(e *env) *cobra.Command {
	var container, since string
	var follow, previous, timestamps bool
	var tail int
	cmd := &cobra.Command{
		Use:   "logs CLUSTER [MEMBER]",
		Short: "A member's logs (default: the primary's mysqld), through kubectl logs",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			member := ""
			if len(args) == 2 {
				member = args[1]
			} else {
				c, err := e.mysql.MysqlopV1alpha1().MySQLClusters(e.namespace).Get(ctx, args[0], metav1.GetOptions{})
				if err != nil {
					return err
				}
				if member = c.Status.Primary; member == "" {
					return fmt.Errorf("cluster %s has no primary now: name a member", args[0])
				}
			}
			kargs := []string{"logs", member, "-c", container}
			if follow {
				kargs = append(kargs, "-f")
			}
			if previous {
				kargs = append(kargs, "--previous")
			}
			if timestamps {
				kargs = append(kargs, "--timestamps")
			}
			if tail >= 0 {
				kargs = append(kargs, fmt.Sprintf("--tail=%d", tail))
			}
			if since != "" {
				kargs = append(kargs, "--since="+since)
			}
			return e.run(ctx, nil, kargs...)
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", resources.ContainerMySQL, "Container: mysqld or agent")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "Stream the log")
	cmd.Flags().BoolVarP(&previous, "previous", "p", false, "The container's previous run")
	cmd.Flags().BoolVar(&timestamps, "timestamps", false, "Prefix each line with its time")
	cmd.Flags().IntVar(&tail, "tail", -1, "Only the last N lines")
	cmd.Flags().StringVar(&since, "since", "", "Only lines newer than this duration (e.g. 5m)")
	return cmd
}
