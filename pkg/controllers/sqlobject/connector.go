package sqlobject

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	listers "github.com/mysqlop/mysql-operator/pkg/generated/listers/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/certs"
	"github.com/mysqlop/mysql-operator/pkg/resources/secret"
)

// NotReadyError says why the cluster cannot take a change now. It is not retried with
// backoff: the cluster's next status change brings the object back to the queue.
type NotReadyError struct {
	// Reason is a Ready condition reason.
	Reason string
	// Message is for humans.
	Message string
}

func (e *NotReadyError) Error() string { return e.Message }

// Connector opens connections to clusters' primaries as the operator account.
type Connector struct {
	// Clusters is the MySQLCluster cache.
	Clusters listers.MySQLClusterLister
	// Secrets is the cache of the operator's own Secrets, which holds each cluster's
	// internal credentials.
	Secrets corelisters.SecretLister
	// Resolve gives a member's address.
	Resolve resources.Resolver
	// Timeout bounds connecting and each query.
	Timeout time.Duration
}

// Gone reports whether the cluster does not exist or is being deleted, so that nothing in
// its database is left to clean up.
func (c *Connector) Gone(namespace, name string) (bool, error) {
	cl, err := c.Clusters.MySQLClusters(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get cluster %s/%s: %w", namespace, name, err)
	}
	return cl.DeletionTimestamp != nil, nil
}

// Primary connects to the writable primary of cluster namespace/name. Close the instance's DB
// when done. The error is a *NotReadyError when the cluster cannot take changes now.
func (c *Connector) Primary(ctx context.Context, namespace, name string) (*mysql.Instance, error) {
	cl, err := c.Clusters.MySQLClusters(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, &NotReadyError{Reason: v1alpha1.ReasonClusterNotFound, Message: fmt.Sprintf("MySQLCluster %s not found", name)}
	}
	if err != nil {
		return nil, fmt.Errorf("get cluster %s/%s: %w", namespace, name, err)
	}
	if cl.DeletionTimestamp != nil {
		return nil, &NotReadyError{Reason: v1alpha1.ReasonClusterNotReady, Message: fmt.Sprintf("MySQLCluster %s is being deleted", name)}
	}
	if cl.Status.Primary == "" {
		return nil, &NotReadyError{Reason: v1alpha1.ReasonClusterNotReady, Message: fmt.Sprintf("MySQLCluster %s has no primary yet", name)}
	}
	sec, err := secret.Get(c.Secrets, cl)
	var nc *secret.NotControlledError
	switch {
	case apierrors.IsNotFound(err):
		return nil, &NotReadyError{Reason: v1alpha1.ReasonClusterNotReady, Message: fmt.Sprintf("MySQLCluster %s has no credentials Secret yet", name)}
	case errors.As(err, &nc):
		return nil, &NotReadyError{Reason: v1alpha1.ReasonClusterNotReady, Message: fmt.Sprintf("MySQLCluster %s: %v", name, err)}
	}
	if err != nil {
		return nil, fmt.Errorf("get credentials of cluster %s/%s: %w", namespace, name, err)
	}
	host, port := c.Resolve(cl, cl.Status.Primary)
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	tlsConfig, err := c.tls(cl)
	if err != nil {
		return nil, &NotReadyError{Reason: v1alpha1.ReasonClusterNotReady, Message: fmt.Sprintf("MySQLCluster %s: %v", name, err)}
	}
	db, err := mysql.Open(mysql.ConnConfig{
		Addr: host + ":" + strconv.Itoa(port), User: mysql.OperatorUser,
		Password: string(sec.Data[resources.SecretKeyOperatorPassword]), Timeout: timeout, TLS: tlsConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("connect to primary %s of cluster %s: %w", cl.Status.Primary, name, err)
	}
	in := &mysql.Instance{DB: db, Flavor: mysql.Flavor(cl.Spec.Flavor)}
	if in.Flavor == "" {
		in.Flavor = mysql.Flavor(v1alpha1.FlavorMySQL)
	}
	// The status can lag a switchover: a former primary is read-only, and the operator
	// account could write through read_only, so check before any change.
	writable, err := in.Writable(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("primary %s of cluster %s: %w", cl.Status.Primary, name, err)
	}
	if !writable {
		db.Close()
		return nil, &NotReadyError{Reason: v1alpha1.ReasonClusterNotReady, Message: fmt.Sprintf("member %s of MySQLCluster %s is read-only: the primary is moving", cl.Status.Primary, name)}
	}
	return in, nil
}

// tls is the TLS configuration for cl's primary: nil while the primary does not serve TLS
// (status.instances says), else one that verifies its certificate under the cluster's CA.
func (c *Connector) tls(cl *v1alpha1.MySQLCluster) (*tls.Config, error) {
	i := slices.IndexFunc(cl.Status.Instances, func(in v1alpha1.InstanceStatus) bool { return in.Name == cl.Status.Primary })
	if i < 0 || !cl.Status.Instances[i].TLS {
		return nil, nil
	}
	s, err := c.Secrets.Secrets(cl.Namespace).Get(resources.TLSSecretName(cl))
	if err != nil {
		return nil, fmt.Errorf("the primary serves TLS but its CA is not readable: %w", err)
	}
	host, _ := resources.DNSResolver(cl, cl.Status.Primary)
	return certs.ClientTLS(s.Data[resources.SecretKeyCA], host)
}

// IsNotReady returns the NotReadyError in err, if any.
func IsNotReady(err error) (*NotReadyError, bool) {
	var nr *NotReadyError
	ok := errors.As(err, &nr)
	return nr, ok
}
