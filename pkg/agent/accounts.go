package agent

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// DropInstallerAccounts removes, on the running server, the accounts a datadir initialiser
// created that the operator never wants (mysql.DropInstallerAccounts: root on hosts other than
// localhost, anonymous accounts). Init already drops them from every datadir it creates,
// restores or seeds; this covers datadirs an earlier operator version initialised, which still
// hold MariaDB's passwordless root@127.0.0.1, root@::1 and root@<hostname>. It retries every
// interval until the server answers and the accounts are gone, or ctx ends.
func DropInstallerAccounts(ctx context.Context, in *mysql.Instance, interval time.Duration) {
	logger := klog.FromContext(ctx)
	for {
		dropped, err := in.DropInstallerAccounts(ctx)
		for _, a := range dropped {
			logger.Info("Dropped an account the server's installer created", "account", a.String())
		}
		if err == nil {
			return
		}
		logger.V(2).Info("Dropping the installer's accounts, will retry", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
