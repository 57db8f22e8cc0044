// Package agents makes clients of a cluster's agents for the controllers: the address of a
// member's agent and the cluster's token and pinned certificate from the operator's cache of
// its own Secrets.
package agents

import (
	"fmt"
	"net"
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

// Client returns a client of member's agent, with the cluster's agent token and agent
// certificate (pinned: the agent must present it) from the operator's cache of its own Secrets.
func Client(secrets corelisters.SecretLister, resolve resources.Resolver, cl *v1alpha1.MySQLCluster, member string) (*agentapi.Client, error) {
	sec, err := secret.Get(secrets, cl)
	if err != nil {
		return nil, fmt.Errorf("credentials of MySQLCluster %s: %w", cl.Name, err)
	}
	tlsConfig, err := agentapi.ClientTLS(sec.Data[resources.SecretKeyAgentTLSCert])
	if err != nil {
		return nil, fmt.Errorf("credentials of MySQLCluster %s: %w", cl.Name, err)
	}
	host, port := resolve(cl, member)
	return &agentapi.Client{BaseURL: "https://" + net.JoinHostPort(host, strconv.Itoa(port)), Token: string(sec.Data[resources.SecretKeyAgentToken]), TLS: tlsConfig}, nil
}
