# mysqlop developer entry points. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := help

GO      ?= go
BIN     := $(CURDIR)/_output/bin
PKG     := github.com/mysqlop/mysql-operator
VERSION ?= v0.1.0-dev
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X $(PKG)/pkg/version.Version=$(VERSION) -X $(PKG)/pkg/version.GitCommit=$(COMMIT) -X $(PKG)/pkg/version.BuildDate=$(DATE)
KUBECONFIG ?= $(HOME)/.kube/config
# Benchmark sizes: cluster counts, client QPS settings and the clusters' TLS (on,off) (comma-separated).
CLUSTERS ?= 10,100,500
QPS      ?= 0,20
TLS      ?= on
PITR_MB ?= 256
BURST   ?= 0
BACKUP_MB ?= 1024
CHAOS_ROUNDS ?= 3

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build mysql-operator, mysql-agent, the kubectl plugin kubectl-mysqlop and the test runtime local-kubelet (static) into _output/bin.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/mysql-operator ./cmd/mysql-agent ./cmd/kubectl-mysqlop ./test/localkubelet/cmd/local-kubelet

.PHONY: local-up
local-up: deps tools build ## Main job: a local cluster whose pods are real processes, the operator installed by helm, a Ready 3-member MariaDB cluster (returns; make local-down stops it).
	$(GO) run ./test/localup up

.PHONY: local-down
local-down: ## Stop the local cluster and check that no process, namespace or link is left.
	$(GO) run ./test/localup down

.PHONY: generate
generate: ## Regenerate deepcopy, clientset, listers, informers, apply configurations and CRDs.
	hack/update-codegen.sh

.PHONY: verify
verify: ## Fail on stale generated code, CRDs or rendered manifests, a chart helm lint refuses, unformatted code, go vet findings or an untidy go.mod.
	hack/verify-codegen.sh
	_output/bin/helm lint --strict contrib/charts/mysql-operator
	@out=$$(gofmt -l $$(ls -d cmd pkg test 2>/dev/null)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	$(MAKE) lint

.PHONY: lint
lint: ## staticcheck (pinned, built from the module proxy) on all but generated code, and the operator's dependency rule: it links none of the agent's server, toolbox, backup tools or test helpers.
	hack/build-tools.sh staticcheck
	_output/bin/staticcheck $$($(GO) list ./... | grep -v /pkg/generated/)
	hack/verify-deps.sh

.PHONY: deps
deps: ## Install the Debian packages the tests and the local cluster need (MariaDB, iproute2, util-linux), when missing.
	hack/install-deps.sh

.PHONY: tools
tools: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, helm and versitygw from source (only what is missing or stale).
	hack/build-tools.sh

.PHONY: test
test: test-unit test-alerts test-integration ## Run the whole test suite (the README's test command): unit, alert rules, then integration tests.

.PHONY: test-mysql
test-mysql: ## The flavor-parametrised real-server suites against MySQL: MYSQLD=/path/to/mysqld (8.0 or 8.4) make test-mysql. Never run here: no MySQL server binary is obtainable on this project's machines.
	@test -n "$(MYSQLD)" || { echo "test-mysql: set MYSQLD to a MySQL 8.x server binary" >&2; exit 2; }
	MYSQLD=$(MYSQLD) $(GO) test -count=1 -run 'TestReplicationOnMariaDB|TestSemiSyncAcknowledgementsOnMariaDB' ./pkg/mysql
	MYSQLD=$(MYSQLD) $(GO) test -count=1 -run 'OnMariaDB' ./pkg/clustering
	MYSQLD=$(MYSQLD) $(GO) test -count=1 -run 'TestServeOnMariaDB' ./pkg/agent

.PHONY: test-alerts
test-alerts: ## Check the chart's alert rules with promtool (built from the Prometheus module): syntax and every case in test/alerts.
	hack/build-tools.sh promtool
	_output/bin/promtool check rules contrib/charts/mysql-operator/files/alerts.yaml
	cd test/alerts && ../../_output/bin/promtool test rules alerts_test.yaml

.PHONY: test-unit
test-unit: deps ## Run the package tests (no control plane; real MariaDB and, for storage, versitygw from _output/bin, built if missing).
	hack/build-tools.sh versitygw
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /test/)

.PHONY: test-integration
test-integration: deps tools build ## Run the integration and end-to-end suites against a real control plane (verbose: the log names the components).
	hack/build-tools.sh prometheus
	$(GO) test -race -count=1 -timeout 30m -v ./test/...

.PHONY: chaos
chaos: deps tools build ## Chaos suite (root): every fault kind CHAOS_ROUNDS times (default 3) on a local cluster under a writer; prints figures per fault kind.
	CHAOS_ROUNDS=$(CHAOS_ROUNDS) $(GO) test -count=1 -v -timeout 180m -run TestChaos ./test/chaos/

.PHONY: bench-chaos
bench-chaos: deps tools build ## Chaos benchmark (root): 12 rounds of the 12 fault kinds (144 faults); prints the table of docs/benchmarks.md.
	CHAOS_ROUNDS=12 CHAOS_REPORT=$(CURDIR)/_output/chaos-report.md $(GO) test -count=1 -v -timeout 300m -run TestChaos ./test/chaos/

.PHONY: bench
bench: tools ## Reconcile benchmark: N MySQLClusters with kwok pods at two QPS settings (0: none, the default), beside the control plane's floor (TLS=on,off to compare); prints a table.
	$(GO) run ./test/bench/reconcile -clusters '$(CLUSTERS)' -qps '$(QPS)' -tls '$(TLS)'

.PHONY: bench-backup
bench-backup: tools ## Backup benchmark: ~1 GiB table on real MariaDB, logical and physical backups to versitygw and restores through the agent, against the raw tools; prints a table.
	$(GO) run ./test/bench/backup -size-mb $(BACKUP_MB)

.PHONY: bench-pitr
bench-pitr: tools ## Point-in-time recovery benchmark on real MariaDB and versitygw: replay through the agent against mariadb-binlog | mariadb by hand, and archive lag under a steady writer; prints two tables.
	$(GO) run ./test/bench/pitr -size-mb $(PITR_MB)

.PHONY: bench-failover
bench-failover: ## Failover benchmark on real MariaDB: SIGKILL of the primary to the first acknowledged write, 20 runs.
	$(GO) run ./test/bench/failover -runs 20

.PHONY: bench-local
bench-local: deps tools build ## Local-cluster benchmark (root): apply to Healthy of a real 3-member MariaDB cluster and failover of a crash-looping primary, 5 runs (BURST=500: while 500 other clusters are created).
	$(GO) run ./test/bench/local -runs 5 -burst '$(BURST)'

.PHONY: dev-cluster
dev-cluster: tools build ## Main job: a local control plane with kwok nodes, the operator and an example cluster (foreground; Ctrl-C stops it).
	$(GO) run ./test/devcluster

.PHONY: run
run: build ## Run the operator against KUBECONFIG (install contrib/manifests/crds first).
	$(BIN)/mysql-operator --kubeconfig '$(KUBECONFIG)' --leader-elect=false

.PHONY: image
image: ## Build the operator and agent images (needs a Docker engine).
	docker build --target operator -t mysqlop/mysql-operator:$(VERSION) --build-arg VERSION=$(VERSION) .
	docker build --target agent -t mysqlop/mysql-agent:$(VERSION) --build-arg VERSION=$(VERSION) .

.PHONY: clean
clean: ## Remove build outputs.
	rm -rf _output
