package localcluster

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// Pools are connection pools to a namespace's member pods as one account, one per pod IP (the
// host reaches pods over the bridge; there is no kube-proxy for Service IPs). A recreated pod
// gets a new IP, and so a new pool.
type Pools struct {
	c                  *Cluster
	ns, user, password string
	// MaxOpen bounds each pool's connections (0: unbounded).
	MaxOpen int

	mu  sync.Mutex
	dbs map[string]*sql.DB
}

// Pools returns pools to the members in namespace ns as user.
func (c *Cluster) Pools(ns, user, password string) *Pools {
	return &Pools{c: c, ns: ns, user: user, password: password, dbs: map[string]*sql.DB{}}
}

// Get returns the pool of the pod named member. It fails (without a test failure, for
// goroutines) while the pod has no IP.
func (p *Pools) Get(member string) (*sql.DB, error) {
	pod, err := p.c.CP.Kube.CoreV1().Pods(p.ns).Get(context.Background(), member, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("%s has no IP yet", member)
	}
	return p.ByIP(pod.Status.PodIP)
}

// ByIP returns the pool of the pod with ip.
func (p *Pools) ByIP(ip string) (*sql.DB, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if db, ok := p.dbs[ip]; ok {
		return db, nil
	}
	db, err := mysql.Open(mysql.ConnConfig{Addr: net.JoinHostPort(ip, "3306"), User: p.user, Password: p.password, Timeout: 2 * time.Second})
	if err != nil {
		return nil, err
	}
	if p.MaxOpen > 0 {
		db.SetMaxOpenConns(p.MaxOpen)
	}
	p.dbs[ip] = db
	return db, nil
}

// Close closes every pool.
func (p *Pools) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ip, db := range p.dbs {
		db.Close()
		delete(p.dbs, ip)
	}
}
