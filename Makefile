# Make targets for the serverless MCP endpoint. `make test` installs what the
# tests need (pinned) and runs everything; see README.md.

SHELL := /bin/bash
GO ?= go
TOOLS := $(CURDIR)/.tools
export GOBIN := $(TOOLS)/bin
export PATH := $(GOBIN):$(PATH)

STATICCHECK_VERSION := v0.8.2
FUZZTIME ?= 20s

MODULES := . interop bench

.PHONY: all test unit vet lint fmt tools fuzz bench clean

all: test

## tools: install the pinned tools the tests use (idempotent)
tools: $(GOBIN)/staticcheck

$(GOBIN)/staticcheck:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## test: vet, lint and test every module, with the race detector
test: tools vet lint unit

unit:
	@set -e; for m in $(MODULES); do \
		echo "== go test $$m"; \
		(cd $$m && $(GO) test -race -count=1 ./...); \
	done

vet:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

lint: tools
	@set -e; for m in $(MODULES); do (cd $$m && staticcheck ./...); done

fmt:
	gofmt -w $$(git ls-files '*.go')

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	@set -e; for pkg in ./pkg/stateless ./pkg/reqstate ./internal/canon; do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			$(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; \
		done; \
	done

## bench: side-by-side benchmarks against the peers (bench/ module)
bench:
	cd bench && $(GO) run ./report

clean:
	rm -rf $(TOOLS)
