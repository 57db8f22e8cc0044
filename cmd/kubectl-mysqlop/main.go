// Command kubectl-mysqlop is the kubectl plugin for mysqlop's MySQLClusters: on PATH, kubectl
// runs it as `kubectl mysqlop` (package kubectlplugin).
package main

import (
	"os"

	"github.com/mysqlop/mysql-operator/pkg/kubectlplugin"
)

func main() {
	os.Exit(kubectlplugin.Main(os.Args[1:], kubectlplugin.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
