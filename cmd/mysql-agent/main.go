// Command mysql-agent runs beside every MySQL server: it initialises the data directory, serves
// probes and the operator's API. This build only reports its version; the init and serve
// commands come with the clustering work (see docs/architecture.md, "Status").
package main

import (
	"fmt"
	"os"

	"github.com/mysqlop/mysql-operator/pkg/version"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "version" || os.Args[1] == "--version") {
		fmt.Println("mysql-agent", version.String())
		return
	}
	fmt.Fprintln(os.Stderr, "mysql-agent: only `mysql-agent version` is implemented in this build")
	os.Exit(2)
}
