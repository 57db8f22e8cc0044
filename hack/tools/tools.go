//go:build tools

// Package tools records the code generators that hack/update-codegen.sh runs.
package tools

import (
	_ "k8s.io/code-generator"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
