// Package version holds the build's version, stamped by the linker:
//
//	-ldflags "-X github.com/mysqlop/mysql-operator/pkg/version.Version=v0.1.0 -X ...GitCommit=abc"
package version

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
)

// Stamped at build time; the defaults mark an unstamped development build.
var (
	// Version is the semantic version of the build.
	Version = "v0.0.0-dev"
	// GitCommit is the commit the build was made from.
	GitCommit = "unknown"
	// BuildDate is when the build was made (RFC 3339).
	BuildDate = "unknown"
)

// String is the one-line description printed by --version.
func String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s)", Version, GitCommit, BuildDate, runtime.Version())
}

var labelUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// LabelValue turns a version into a valid label value: characters a label may not hold become
// '_', the value is cut to 63 characters and trimmed to start and end alphanumerically.
func LabelValue(v string) string {
	s := labelUnsafe.ReplaceAllString(v, "_")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "_.-")
}
