# rdmatopo — build, demo and test targets. Every tool the tests need is built
# here from the Go module proxy; nothing is installed by hand.

GO        ?= go
BIN       ?= bin
PKGS      := ./framework/... ./plugins/... ./actions/... ./cmd/... ./internal/...

.PHONY: all build demo test unit integration bench lint fmt vet clean-bin

all: build

build:
	$(GO) build -o $(BIN)/rdmatopo ./cmd/rdmatopo
	$(GO) build -o $(BIN)/vc-scheduler ./cmd/vc-scheduler

## demo: run the main job (simulate on the embedded default cluster + workload)
demo: build
	$(BIN)/rdmatopo simulate --map fabric.svg
	@echo "fabric map written to fabric.svg"

## test: unit tests (with fuzz seed corpora) and integration tests
test: unit integration

unit:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 $(PKGS)

integration:
	$(MAKE) -C integration test

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

clean-bin:
	rm -rf $(BIN)
