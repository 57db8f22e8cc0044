// Command mysql-operator runs the mysqlop controllers: flags, logging and signals here; the
// wiring is in pkg/operator.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/operator"
	"github.com/mysqlop/mysql-operator/pkg/options"
	"github.com/mysqlop/mysql-operator/pkg/version"
)

func main() {
	opts := options.New()
	fs := pflag.NewFlagSet("mysql-operator", pflag.ExitOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "mysql-operator runs MySQL and MariaDB clusters on Kubernetes.\n\nUsage:\n  mysql-operator [flags]\n\nFlags:\n%s", fs.FlagUsages())
	}
	opts.AddFlags(fs)
	// klog is the one logger of the process; client-go logs through it too.
	klogFlags := goflag.NewFlagSet("klog", goflag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if opts.ShowVersion {
		fmt.Println("mysql-operator", version.String())
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := operator.Run(ctx, opts); err != nil {
		klog.ErrorS(err, "mysql-operator stopped")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
