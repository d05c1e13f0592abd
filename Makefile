# rdmatopo — build, demo and test targets. Every tool the tests need is built
# here from the Go module proxy; nothing is installed by hand.

GO        ?= go
BIN       ?= bin
PKGS      := ./core/... ./plugins/... ./actions/... ./cmd/... ./internal/... ./hack/... ./registry/...
# Version stamped into the kubectl plugin and rdmatopo_build_info.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GIT_SHA   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The operator's binaries ship without the symbol table and DWARF (-s -w):
# stack traces keep their file:line, and rdmatopo drops from 113 MB to 80 MB.
STRIP_LDFLAGS := -s -w
BUILT     ?= $(shell date -u '+%Y-%m-%d %H:%M:%S')
# rdmatopo's version package: rdmatopo_build_info, `kubectl rdmatopo version`.
VERSION_LDFLAGS := -X github.com/rdmatopo/rdmatopo/internal/version.Version=$(VERSION) -X github.com/rdmatopo/rdmatopo/internal/version.GitCommit=$(GIT_SHA)
# Volcano's, in vc-scheduler: `vc-scheduler --version`.
VOLCANO_VERSION_LDFLAGS := -X volcano.sh/volcano/pkg/version.Version=$(VERSION) -X volcano.sh/volcano/pkg/version.GitSHA=$(GIT_SHA) -X 'volcano.sh/volcano/pkg/version.Built=$(BUILT)'

.PHONY: all build vc-scheduler cli kubectl-plugin install-kubectl-plugin build-dev demo test unit integration bench bench-full bench-e2e bench-plot soak-full fuzz lint fmt vet clean-bin

all: build

build: vc-scheduler cli kubectl-plugin

## kubectl-plugin: the kubectl plugin's two binaries: bin/kubectl-rdmatopo
## (the read-only views) and bin/kubectl-rdmatopo-simulate (`kubectl
## rdmatopo simulate` and explain's next session, which run the Volcano
## scheduler in memory)
kubectl-plugin:
	$(GO) build -ldflags "$(STRIP_LDFLAGS) $(VERSION_LDFLAGS)" -o $(BIN)/kubectl-rdmatopo ./cmd/kubectl-rdmatopo
	$(GO) build -ldflags "$(STRIP_LDFLAGS) $(VERSION_LDFLAGS)" -o $(BIN)/kubectl-rdmatopo-simulate ./cmd/kubectl-rdmatopo-simulate

## install-kubectl-plugin: install both plugin binaries side by side into
## PLUGIN_DIR (default /usr/local/bin), which must be on PATH for kubectl
PLUGIN_DIR ?= /usr/local/bin
install-kubectl-plugin: kubectl-plugin
	install -d $(DESTDIR)$(PLUGIN_DIR)
	install -m 0755 $(BIN)/kubectl-rdmatopo $(BIN)/kubectl-rdmatopo-simulate $(DESTDIR)$(PLUGIN_DIR)/

## vc-scheduler: bin/vc-scheduler with both version packages stamped; the
## Dockerfile builds the image's binary with this target (VERSION, GIT_SHA
## and BIN from its build arguments)
vc-scheduler:
	$(GO) build -ldflags "$(STRIP_LDFLAGS) $(VERSION_LDFLAGS) $(VOLCANO_VERSION_LDFLAGS)" -o $(BIN)/vc-scheduler ./cmd/vc-scheduler

## cli: bin/rdmatopo (simulate, export, companion); the image carries it
## for companion mode (`/rdmatopo companion`)
cli:
	$(GO) build -ldflags "$(STRIP_LDFLAGS) $(VERSION_LDFLAGS)" -o $(BIN)/rdmatopo ./cmd/rdmatopo

## build-dev: the developer tool (bench, soak), kept out of the operator's binaries
build-dev:
	$(GO) build -o $(BIN)/rdmatopo-dev ./hack/rdmatopo-dev

## demo: run the main job (simulate on the embedded default cluster + workload)
demo: build
	$(BIN)/rdmatopo simulate --map fabric.svg
	@echo "fabric map written to fabric.svg"

## test: unit tests under the race detector (fuzz seed corpora and a
## 300-job soak included) and integration tests on a real kube-apiserver
test: unit integration

unit:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -race $(PKGS)

integration:
	$(MAKE) -C integration test

## bench: Go benchmarks (planner, fabric build, sessions)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./core/... ./internal/devtools/bench/...

## bench-full: rdmatopo against stock Volcano at 1k, 4k and 10k nodes with
## Volcano's default (adaptive) nodes-to-find, and at 1k with every node
## checked; JSON into docs/, then the plot (9 minutes measured on 2 cores).
## BENCH_CONSTRAINTS=on adds taints, pools, memory, host ports and
## mixed-shape gangs (the committed JSON was measured with off).
BENCH_NODES ?= 1000 4000 10000
BENCH_ALL_NODES ?= 1000
BENCH_CONSTRAINTS ?= off
bench-full: build-dev
	for n in $(BENCH_NODES); do $(BIN)/rdmatopo-dev bench --nodes $$n --constraints $(BENCH_CONSTRAINTS) -o json > docs/bench-$$n.json || exit 1; done
	for n in $(BENCH_ALL_NODES); do $(BIN)/rdmatopo-dev bench --nodes $$n --constraints $(BENCH_CONSTRAINTS) --nodes-to-find-percent 100 -o json > docs/bench-all-nodes-$$n.json || exit 1; done
	$(MAKE) bench-plot

## bench-plot: redraw docs/bench-plot.svg from the committed bench JSON
bench-plot:
	$(GO) run ./hack/bench-plot -o docs/bench-plot.svg $(wildcard docs/bench-[0-9]*.json)

## bench-e2e: rdmatopo's vc-scheduler against stock vc-scheduler v1.10.0 and
## Kueue v0.17.0 TAS with kube-scheduler v1.30.2 on a real kube-apiserver
## with NODES kwok nodes (a fresh control plane per run); prints one JSON
## object (docs/benchmarks.md, "End to end"). BURST=1 submits every job of
## the trace at once (saturation: the scheduler, not the arrivals, bounds
## the run). RUNS picks runs, e.g. RUNS=rdmatopo,stock; stock-companion and
## kueue-companion run `rdmatopo companion`'s bind webhook beside stock or
## Kueue (e.g. RUNS=stock-companion,kueue-companion)
NODES ?= 1000
BURST ?=
RUNS ?= rdmatopo,stock,kueue
BENCH_E2E_FLAGS ?=
bench-e2e:
	@cd integration && ./hack/build-tools.sh etcd kube-apiserver vc-controller-manager kwok vc-scheduler vc-scheduler-stock \
		$(if $(findstring kueue,$(RUNS)),kube-scheduler kueue) $(if $(findstring companion,$(RUNS)),rdmatopo) >&2
	@$(GO) build -o $(BIN)/bench-e2e ./internal/devtools/benche2e
	@$(BIN)/bench-e2e --nodes $(NODES) --bin integration/.bin --repo . --runs $(RUNS) $(if $(filter-out 0,$(BURST)),--burst) $(BENCH_E2E_FLAGS)

## soak-full: the full-size churn soak (exit 1 on any violation)
soak-full: build-dev
	$(BIN)/rdmatopo-dev soak --jobs 5000 --bind-failure-rate 0.05 --kcnr-lag 3 --restart-every 500 -o json

## fuzz: run every fuzz target for FUZZTIME each (seeds also run in unit)
FUZZTIME ?= 10m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzBuildNode$$' -fuzztime $(FUZZTIME) ./core/topology
	$(GO) test -run '^$$' -fuzz '^FuzzAnnotations$$' -fuzztime $(FUZZTIME) ./core/ledger
	$(GO) test -run '^$$' -fuzz '^FuzzParseArgs$$' -fuzztime $(FUZZTIME) ./plugins/rdmatopology
	$(GO) test -run '^$$' -fuzz '^FuzzLoadWorkload$$' -fuzztime $(FUZZTIME) ./internal/workload
	$(GO) test -run '^$$' -fuzz '^FuzzLoadCluster$$' -fuzztime $(FUZZTIME) ./internal/workload

fmt:
	gofmt -w $$(git ls-files '*.go')

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean-bin:
	rm -rf $(BIN)
