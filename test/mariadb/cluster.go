package mariadb

import (
	"time"

	"github.com/mysqlop/mysql-operator/pkg/clustering"
)

// Operator returns a clustering operator over servers: loopback endpoints, the replication
// account, loss-less semi-sync, and the admin account protected from fencing; replication over
// verified TLS when the servers serve it.
func Operator(servers []*Server) *clustering.Operator {
	op := &clustering.Operator{
		Flavor: Flavor(), ReplUser: ReplUser, ReplPassword: ReplPassword,
		SemiSync: true, ProtectedUsers: []string{AdminUser}, ApplyTimeout: 20 * time.Second,
	}
	for _, s := range servers {
		op.Instances = append(op.Instances, s.Admin())
		op.Endpoints = append(op.Endpoints, clustering.Endpoint{Host: "127.0.0.1", Port: s.Port, TLS: s.TLS != nil})
		if s.TLS != nil {
			op.TLSCAFile = s.TLS.CAFile()
		}
	}
	return op
}
