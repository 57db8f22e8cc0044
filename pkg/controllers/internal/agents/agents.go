// Package agents makes clients of a cluster's agents for the controllers: the address of a
// member's agent, the cluster's token, and the CA or pinned certificate its agent is verified
// with, from the operator's cache of its own Secrets.
package agents

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strconv"

	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/secret"
)

// DNSResolver reaches agents by the members' stable DNS names.
func DNSResolver(c *v1alpha1.MySQLCluster, pod string) (string, int) {
	host, _ := resources.DNSResolver(c, pod)
	return host, resources.PortAgent
}

// servesTLS reports whether the cluster's status says member serves the cluster's certificate.
func servesTLS(cl *v1alpha1.MySQLCluster, member string) bool {
	i := slices.IndexFunc(cl.Status.Instances, func(in v1alpha1.InstanceStatus) bool { return in.Name == member })
	return i >= 0 && cl.Status.Instances[i].TLS
}

// Client is what the controllers ask of a member's agent; *agentapi.Client is the real one,
// unit fixtures give a fake.
type Client interface {
	// StartBackup starts a backup (idempotent by ID).
	StartBackup(ctx context.Context, req agentapi.BackupRequest) (*agentapi.BackupState, error)
	// Backup returns a backup's state; agentapi.ErrBackupNotFound when the agent lost it.
	Backup(ctx context.Context, id string) (*agentapi.BackupState, error)
	// StartRestore starts a restore (idempotent by ID).
	StartRestore(ctx context.Context, req agentapi.BackupRequest) (*agentapi.BackupState, error)
	// Restore returns a restore's state; agentapi.ErrBackupNotFound when the agent has none.
	Restore(ctx context.Context, id string) (*agentapi.BackupState, error)
	// CommitRestore commits a staged physical restore.
	CommitRestore(ctx context.Context, id string) (*agentapi.BackupState, error)
	// DiscardRestore throws a staged restore away.
	DiscardRestore(ctx context.Context, id string) error
	// StartChecksum starts checksumming the member's tables (idempotent by ID).
	StartChecksum(ctx context.Context, req agentapi.ChecksumRequest) (*agentapi.BackupState, error)
	// Checksum returns a checksum job's state; agentapi.ErrBackupNotFound when the agent lost it.
	Checksum(ctx context.Context, id string) (*agentapi.BackupState, error)
	// Status returns the member's state.
	Status(ctx context.Context) (*agentapi.StatusJSON, error)
	// Reseed marks the member for re-seeding at its next start.
	Reseed(ctx context.Context, reason string) error
	// KillServer SIGKILLs the member's server.
	KillServer(ctx context.Context) error
	// Archive returns the state of the member's binary log archiving.
	Archive(ctx context.Context) (*agentapi.ArchiveState, error)
	// ConfigureArchive sets it.
	ConfigureArchive(ctx context.Context, req agentapi.ArchiveRequest) (*agentapi.ArchiveState, error)
	// StopArchive stops it.
	StopArchive(ctx context.Context) error
}

// Dialer returns a client of member's agent in cl.
type Dialer func(cl *v1alpha1.MySQLCluster, member string) (Client, error)

// TLSDialer is the production Dialer: Dial with the operator's Secret cache and resolve
// (DNSResolver when nil).
func TLSDialer(secrets corelisters.SecretLister, resolve resources.Resolver) Dialer {
	if resolve == nil {
		resolve = DNSResolver
	}
	return func(cl *v1alpha1.MySQLCluster, member string) (Client, error) {
		return Dial(secrets, resolve, cl, member)
	}
}

// Dial returns a client of member's agent, with the cluster's agent token from the operator's
// cache of its own Secrets. A member that serves TLS (status.instances[].tls) serves the
// cluster's certificate on its agent API too, verified under the cluster's CA for the member's
// DNS name; another presents the pinned agent certificate of the credentials Secret.
func Dial(secrets corelisters.SecretLister, resolve resources.Resolver, cl *v1alpha1.MySQLCluster, member string) (*agentapi.Client, error) {
	sec, err := secret.Get(secrets, cl)
	if err != nil {
		return nil, fmt.Errorf("credentials of MySQLCluster %s: %w", cl.Name, err)
	}
	var tlsConfig *tls.Config
	if servesTLS(cl, member) {
		s, err := secrets.Secrets(cl.Namespace).Get(resources.TLSSecretName(cl))
		if err != nil {
			return nil, fmt.Errorf("CA of MySQLCluster %s: %w", cl.Name, err)
		}
		name, _ := resources.DNSResolver(cl, member)
		tlsConfig, err = agentapi.ClientTLSFromCA(s.Data[resources.SecretKeyCA], name)
		if err != nil {
			return nil, fmt.Errorf("CA of MySQLCluster %s: %w", cl.Name, err)
		}
	} else if tlsConfig, err = agentapi.ClientTLS(sec.Data[resources.SecretKeyAgentTLSCert]); err != nil {
		return nil, fmt.Errorf("credentials of MySQLCluster %s: %w", cl.Name, err)
	}
	host, port := resolve(cl, member)
	return &agentapi.Client{BaseURL: "https://" + net.JoinHostPort(host, strconv.Itoa(port)), Token: string(sec.Data[resources.SecretKeyAgentToken]), TLS: tlsConfig}, nil
}
