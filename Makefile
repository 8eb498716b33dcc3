# Make targets for the serverless MCP endpoint; see README.md.
#
#   make run      the endpoint on http://127.0.0.1:8080/mcp, no configuration
#   make invoke   sample events through the binary under the Lambda emulator
#   make test     installs what the tests need (pinned), then runs them all

SHELL := /bin/bash
GO ?= go
TOOLS := $(CURDIR)/.tools
export GOBIN := $(TOOLS)/bin
export PATH := $(GOBIN):$(PATH)
# Tests that need a tool make tools installs fail without it under make;
# a bare go test skips them, saying how to run them (internal/testenv/need).
export MCP_TESTS_NEED_TOOLS := 1

STATICCHECK_VERSION := v0.8.2
APIDIFF_VERSION := v0.0.0-20261113113407-e3970619a1a4
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE := $(GOBIN)/aws-lambda-rie
LOCAL_KMS_VERSION := v0.0.0-20260228092603-2a5e92d09ab6

VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
HOSTARCH := $(shell $(GO) env GOARCH)
# How Lambda runs a Go function: static, no RPC shim, nothing to strip.
BUILD_FLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w -X main.version=$(VERSION)'

# make invoke: EVENT empty runs every sample event; ENV=deploy/sam-local-env.json
# runs with that environment (against make local-aws).
EVENT ?=
ENV ?=
FUZZTIME ?= 20s
MODULES := . interop bench deploy examples e2e

.PHONY: event all run build build-McpFunction build-StreamAuthorizerFunction build-ConformanceFunction invoke invoke-all local-aws deploy test unit integration chaos chaos-short soak conformance stress vet lint fmt tools sizes fuzz bench clean FORCE

all: test

## run: the endpoint locally with embedded defaults
run:
	$(GO) run ./functions/mcp

## build: Lambda binaries for arm64 (deployed) and amd64 (run here)
build: build/arm64/bootstrap build/amd64/bootstrap sizes

build/%/bootstrap: FORCE
	GOOS=linux GOARCH=$* CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $@ ./functions/mcp

# The harnesses' function (functions/fixture: the note book on the
# production composition), whatever functions/mcp serves.
build/fixture/%/bootstrap: FORCE
	GOOS=linux GOARCH=$* CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $@ ./functions/fixture

sizes:
	@for f in build/*/bootstrap; do printf '%s\t%s bytes\n' "$$f" "$$(stat -c %s $$f)"; done

## build-McpFunction: what `sam build` runs (BuildMethod: makefile)
build-McpFunction:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/mcp

## build-StreamAuthorizerFunction: the streaming door's authorizer, the
## same binary as the function (a function of its own so that its refused
## tokens are not the function's Errors), for `sam build`
build-StreamAuthorizerFunction: build-McpFunction

## build-ConformanceFunction: the optional conformance fixture, for `sam build`
build-ConformanceFunction:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(BUILD_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/conformance

## invoke: EVENT=events/x.json through the real binary under the Lambda
## runtime emulator: the function's log, the answer, then PASS or FAIL
## against events/x.expected.json (docs/local.md); an event without one
## (make event's) passes when answered without an error. Needs only the emulator
## and a Go build: no npm, no Java, no staticcheck.
invoke: $(RIE) build/$(HOSTARCH)/bootstrap
	@$(GO) build -o $(GOBIN)/mcp-invoke ./cmd/mcp-invoke
	@$(GOBIN)/mcp-invoke -rie $(RIE) -bootstrap build/$(HOSTARCH)/bootstrap $(if $(ENV),-env-file $(ENV)) $(EVENT)

## event: print an event for a tool of yours, in a door's shape, that make
## invoke and sam local invoke -e take: make event TOOL=<name>
## [ARGS='<json>'] [DOOR=http-api|rest|function-url] [KEY=<idempotency
## key>] [CAPS='<client capabilities json>'] [PRINCIPAL=<authorizer
## principal>] [METHOD=<method>] [URI=<resource>] > my-event.json
## (cmd/mcp-event; docs/local.md)
event: export TOOL := $(TOOL)
event: export ARGS := $(ARGS)
event: export DOOR := $(DOOR)
event: export KEY := $(KEY)
event: export CAPS := $(CAPS)
event: export PRINCIPAL := $(PRINCIPAL)
event: export METHOD := $(METHOD)
event: export URI := $(URI)
event:
	@$(GO) run ./cmd/mcp-event

## invoke-all: every sample event, as make invoke without EVENT
invoke-all: EVENT =
invoke-all: invoke

## local-aws: DynamoDB Local and local-kms where deploy/sam-local-env.json
## (or ENV=another copy) sends the function (127.0.0.1:8000 and :8001),
## the table created and the key seeded, for sam local --env-vars; Ctrl-C
## stops both (docs/local.md)
local-aws: $(GOBIN)/local-kms tools/node_modules/.installed java
	@cd e2e && $(GO) build -o $(GOBIN)/mcp-local-aws ./localaws
	$(GOBIN)/mcp-local-aws -env $(or $(ENV),deploy/sam-local-env.json) -seed deploy/local-kms-seed.yaml

## deploy: build and deploy with the SAM CLI (asks for the stack's settings)
deploy:
	sam build && sam deploy --guided

## tools: install the pinned tools the tests use (idempotent)
tools: $(GOBIN)/staticcheck $(GOBIN)/apidiff $(RIE) $(GOBIN)/local-kms tools/node_modules/.installed java chromium

tools/node_modules/.installed: tools/package.json tools/package-lock.json
	# npm ci installs exactly the lock file and never rewrites it, so the
	# checkout stays clean; after changing package.json, npm install
	# --package-lock-only regenerates the lock file, to be committed.
	@echo "npm ci: runs on this machine's Node; the tools themselves run on the Node 22 that tools/ pins, so its engine warnings are not shown"
	cd tools && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# DynamoDB Local runs on Java; Debian's headless JRE where the machine has none.
java:
	@command -v java >/dev/null || { apt-get update && apt-get install -y --no-install-recommends default-jre-headless; }

# The browser test drives a real headless Chromium; Debian's package.
.PHONY: chromium browser
chromium:
	@command -v chromium >/dev/null || { apt-get update && apt-get install -y --no-install-recommends chromium; }

$(GOBIN)/staticcheck:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(GOBIN)/apidiff:
	$(GO) install golang.org/x/exp/cmd/apidiff@$(APIDIFF_VERSION)

$(RIE):
	$(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

$(GOBIN)/local-kms:
	$(GO) install github.com/nsmithuk/local-kms@$(LOCAL_KMS_VERSION)

## test: vet, lint, build for both architectures, run the conformance
## suite on both paths, the short chaos run, and test every module (go
## test's summary last). The template check (one Python process) runs
## beside the conformance suite (which mostly waits on its clients), each
## one's output printed whole when it ends.
test: tools vet lint api build
	@$(MAKE) --no-print-directory -j2 --output-sync=target template conformance
	@$(MAKE) --no-print-directory integration chaos-short abuse-short journeys matrix unit

## fork-suite: make test without the four targets whose every input a
## fork leaves as it is (forkcheck verifies that the fork changed only
## functions/mcp and events/): the template check (template.yaml), the
## conformance suite (functions/conformance), the chaos run and the abuse
## run (functions/fixture); the rest, functions/mcp's tests among them, runs
.PHONY: fork-suite
fork-suite: tools vet lint api build integration journeys matrix unit

## conformance: the official suite against the fixture function, local and
## through the Lambda path, at 2026-07-28 and 2025-11-25
conformance: tools
	$(GO) mod download
	cd e2e && $(GO) build -o $(TOOLS)/confrun ./confrun
	unshare -n -- sh -c 'ip link set lo up && exec "$$0" -tools tools -rie $(RIE)' $(TOOLS)/confrun

# Packages whose tests talk to DynamoDB Local (and local-kms): built
# outside, run inside a network namespace that has only loopback, because
# the emulators listen on every interface. Each runs in a namespace of its
# own, so they do not share ports: the ones that mostly wait (the note
# book's task leases, the stream door's long call) run beside the others.
INTEGRATION := pkg/claims pkg/items pkg/reqstate pkg/tasks pkg/ratelimit pkg/events interop functions/conformance
INTEGRATION_WAITING := notebook e2e/streamrun

## integration: the tests against the real emulators
integration: tools
	@set -e; for d in $(INTEGRATION) $(INTEGRATION_WAITING); do \
		(cd $$d && $(GO) test -race -tags integration -c -o $(TOOLS)/$$(basename $$d).integration.test .); \
	done
	@set -e; pids=; for d in $(INTEGRATION_WAITING); do \
		n=$$(basename $$d); \
		(cd $$d && unshare -n -- sh -c 'ip link set lo up && exec "$$0" -test.count=1' $(TOOLS)/$$n.integration.test) > $(TOOLS)/$$n.integration.out 2>&1 & pids="$$pids $$!"; \
	done; \
	failed=0; for d in $(INTEGRATION); do \
		echo "== integration $$d"; \
		(cd $$d && unshare -n -- sh -c 'ip link set lo up && exec "$$0" -test.count=1' $(TOOLS)/$$(basename $$d).integration.test) || failed=1; \
	done; \
	set -- $$pids; for d in $(INTEGRATION_WAITING); do \
		echo "== integration $$d"; \
		wait $$1 || failed=1; shift; \
		cat $(TOOLS)/$$(basename $$d).integration.out; \
	done; \
	exit $$failed

# The chaos run and the soak need the harnesses' function (functions/fixture)
# as make build builds the deployed one,
# the emulator, local-kms, DynamoDB Local and Java; they run in a
# loopback-only network namespace, as the integration tests do. Each run
# keeps the instances' logs and its report under .tools/chaos or
# .tools/soak. Their harnesses are built without -race: the code under
# test runs in the instances, built as deployed, and the harnesses' own
# parts are tested with -race by make unit.
CHAOS_NEEDS := $(RIE) $(GOBIN)/local-kms tools/node_modules/.installed java build/fixture/$(HOSTARCH)/bootstrap
CHAOS_TEST := $(TOOLS)/chaos.integration.test

## chaos: the five-minute chaos run (docs/chaos.md): the function as a
## fleet of instances under the runtime emulator, against DynamoDB Local
## and local-kms, under load, while instances are killed mid-call,
## DynamoDB requests and responses are delayed and dropped, DynamoDB
## Local restarts and local-kms stops for a while; then the table of what
## happened and the checks (exactly once, no lost write, single use)
chaos: $(CHAOS_NEEDS)
	cd e2e && $(GO) test -tags integration -c -o $(CHAOS_TEST) ./chaos
	cd e2e/chaos && unshare -n -- sh -c 'ip link set lo up && exec "$$0" -test.count=1 -test.run=TestChaos -test.timeout=20m -chaos.full -chaos.logdir=$(TOOLS)/chaos' $(CHAOS_TEST)

## chaos-short: the same run in about a minute and a half (make test)
chaos-short: $(CHAOS_NEEDS)
	cd e2e && $(GO) test -tags integration -c -o $(CHAOS_TEST) ./chaos
	cd e2e/chaos && unshare -n -- sh -c 'ip link set lo up && exec "$$0" -test.count=1 -test.run=TestChaos -test.timeout=10m -test.short -chaos.logdir=$(TOOLS)/chaos $(CHAOS_FLAGS)' $(CHAOS_TEST)

# The abuse run needs what the chaos run needs but local-kms, and the
# fixture as a local server too; each run keeps its logs and report under
# .tools/abuse.
.PHONY: abuse abuse-short
ABUSE_NEEDS := $(RIE) tools/node_modules/.installed java build/fixture/$(HOSTARCH)/bootstrap
ABUSE_TEST := $(TOOLS)/abuse.integration.test
ABUSE_LOCAL := $(TOOLS)/mcp-abuse-local

## abuse: the abuse run (docs/abuse.md), about four minutes: honest
## callers and a hostile one against the function as a fleet under the
## runtime emulator on DynamoDB Local and as local servers; the hostile
## one floods calls, starts tasks, hangs up mid-call, fills the memory
## store and floods anonymously; the table, and the checks (no honest
## call refused, no refusal that wrote, no breaker opened by a caller, no
## hostile task over its quota)
abuse: $(ABUSE_NEEDS)
	$(GO) build -o $(ABUSE_LOCAL) ./functions/fixture
	cd e2e && $(GO) test -tags integration -c -o $(ABUSE_TEST) ./abuse
	cd e2e/abuse && MCP_ABUSE_LOCAL_BIN=$(ABUSE_LOCAL) unshare -n -- sh -c 'ip link set lo up && exec "$$0" -test.count=1 -test.run=TestAbuse -test.timeout=20m -abuse.full -abuse.logdir=$(TOOLS)/abuse' $(ABUSE_TEST)

## abuse-short: the same run in about a minute
abuse-short: $(ABUSE_NEEDS)
	$(GO) build -o $(ABUSE_LOCAL) ./functions/fixture
	cd e2e && $(GO) test -tags integration -c -o $(ABUSE_TEST) ./abuse
	cd e2e/abuse && MCP_ABUSE_LOCAL_BIN=$(ABUSE_LOCAL) unshare -n -- sh -c 'ip link set lo up && exec "$$0" -test.count=1 -test.run=TestAbuse -test.timeout=10m -test.short -abuse.logdir=$(TOOLS)/abuse' $(ABUSE_TEST)

## soak: SOAK_DURATION (default 10m, at most about 1h45m; SOAK_DURATION=1m
## for a smoke test) of steady load on the function as a local server and
## under the emulator, each beside one that served only the warm-up:
## memory slope and goroutines (docs/soak.md)
SOAK_DURATION ?= 10m
soak: $(CHAOS_NEEDS)
	$(GO) build -o $(TOOLS)/mcp-local ./functions/fixture
	cd e2e && $(GO) test -tags integration -c -o $(TOOLS)/soak.integration.test ./soak
	cd e2e/soak && SOAK_DURATION=$(SOAK_DURATION) MCP_SOAK_LOCAL_BIN=$(TOOLS)/mcp-local MCP_SOAK_LOGDIR=$(TOOLS)/soak \
		unshare -n -- sh -c 'ip link set lo up && exec "$$0" -test.count=1 -test.run=TestSoak -test.timeout=2h' $(TOOLS)/soak.integration.test

## stress: the claim race, MCP_STRESS_TRIALS (default 1000) times
stress: tools
	$(GO) test -tags integration -c -o $(TOOLS)/claims.integration.test ./pkg/claims
	cd pkg/claims && MCP_STRESS_TRIALS=$${MCP_STRESS_TRIALS:-1000} unshare -n -- sh -c 'ip link set lo up && exec "$$0" -test.count=1 -test.run=TestRaceGoroutines -test.v' $(TOOLS)/claims.integration.test

## browser: the CORS tests in a real headless Chromium, against the
## endpoint in-process and through the Lambda path (make test runs them
## with the other unit tests)
browser: chromium $(RIE)
	cd functions/fixture && $(GO) test -count=1 -run '^TestBrowserCORS' -v .

## smoke: check a deployed stack from outside, after every sam deploy
## (docs/deploy.md): make smoke URL=https://<api>/mcp [TOKEN=<bearer>]
## [STREAM_URL=<StreamingUrl> [STREAM_TOKEN=...]] [ORIGIN=<allowed origin>]
## [KEYED_TOOL=<tool> KEYED_ARGS=<JSON>] [PROGRESS_TOOL=<tool> PROGRESS_ARGS=<JSON>
## [PROGRESS_GAP=<how long it runs on after its first report, e.g. 2s>]]
## [CONFORMANCE_URL=<ConformanceUrl>: the official suite's required scenarios]
## (your tools in place of the demo's notes_add and notes_digest);
## one verdict line per check, non-zero exit on any failure. make test runs
## it against the emulated stack (interop's TestSmoke). The tokens reach it
## through the environment, never its command line.
.PHONY: smoke
smoke: export TOKEN := $(TOKEN)
smoke: export STREAM_TOKEN := $(STREAM_TOKEN)
smoke: $(if $(CONFORMANCE_URL),tools/node_modules/.installed)
	@test -n "$(URL)" || { echo "usage: make smoke URL=https://<api>/mcp [TOKEN=...] [STREAM_URL=...] [STREAM_TOKEN=...] [ORIGIN=...]"; exit 2; }
	@$(GO) build -o $(TOOLS)/smoke ./cmd/mcp-smoke
	@$(TOOLS)/smoke -url '$(URL)' $(if $(STREAM_URL),-stream-url '$(STREAM_URL)') $(if $(ORIGIN),-origin '$(ORIGIN)') \
		$(if $(KEYED_TOOL),-keyed-tool '$(KEYED_TOOL)' -keyed-args '$(KEYED_ARGS)') $(if $(PROGRESS_TOOL),-progress-tool '$(PROGRESS_TOOL)' -progress-args '$(PROGRESS_ARGS)') \
		$(if $(PROGRESS_GAP),-progress-gap '$(PROGRESS_GAP)') $(if $(CONFORMANCE_URL),-conformance-url '$(CONFORMANCE_URL)')

## auth: the authorization tests alone: a real authorization server
## (oauth2-mock-server on tools/' Node 22), the endpoint local and under the
## emulator, go-sdk's client discovering its way in (make test runs them
## with the other unit tests)
.PHONY: auth
auth: tools/node_modules/.installed $(RIE)
	$(GO) test -count=1 -v ./internal/testenv/oauthmock
	cd interop && $(GO) test -count=1 -run '^TestAuth' -v .

## journeys: a real client's way in against each identity-provider profile
## (interop's TestIdPJourneys: discovery, registration where the provider
## has none, authorization code with PKCE, a tool call, a step-up), through
## each door, and through the authorization proxy; one line per verified
## journey, `idp-journey: ... ok`; and the proxy's consent page in headless
## Chromium (TestConsentPage), `consent-page: <case> ok`
.PHONY: journeys
journeys: tools/node_modules/.installed $(RIE)
	@cd interop && $(GO) test -count=1 -run '^(TestIdPJourneys|TestConsentPage)$$' -v . | grep -E '^(idp-journey:|consent-page:|--- FAIL|FAIL|ok )'; exit $${PIPESTATUS[0]}

## matrix: the client matrix (interop's TestClientMatrix; docs/clients.md
## is generated from it): one line per verified cell,
## `client-matrix: <client> <feature> <door> ok`
.PHONY: matrix
matrix: tools/node_modules/.installed $(RIE)
	@cd interop && $(GO) test -count=1 -run '^(TestClientMatrix|TestClientsDoc)$$' -v . | grep -E '^(client-matrix:|--- FAIL|FAIL|ok )'; exit $${PIPESTATUS[0]}

# The unit tests include the authorization tests, which run the npm tools'
# authorization server and the emulator; interop's client matrix and
# identity-provider journeys run in make matrix and make journeys, not
# again here.
unit: tools/node_modules/.installed $(RIE)
	@set -e; for m in $(MODULES); do \
		echo "== go test $$m"; \
		skip=; [ $$m = interop ] && skip='^(TestClientMatrix|TestClientsDoc|TestIdPJourneys)$$'; \
		(cd $$m && $(GO) test -race -count=1 $${skip:+-skip "$$skip"} ./...); \
	done

vet:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./... && $(GO) vet -tags integration ./...); done
	@# The library and its tests build on macOS too (README, What needs what).
	@GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

lint: tools
	@set -e; for m in $(MODULES); do (cd $$m && staticcheck ./...); done

## template: template.yaml transformed and linted for every combination of
## its parameters (deploy/lint_template.py: aws-sam-translator, cfn-lint),
## and the counter's copy (cmd/mcp-sam's), which the check finds to be
## template.yaml but for comments and CodeUri: the same verdicts, and
## cfn-lint's own run on it
TEMPLATES := template.yaml examples/counter/template.yaml
.PHONY: template
template:
	@if python3 -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec("cfnlint") and u.find_spec("samtranslator")))' 2>/dev/null; then \
		python3 deploy/lint_template.py $(TEMPLATES); \
	else \
		echo '*** SKIPPED template check: cfn-lint / aws-sam-translator not installed for python3 ***'; \
	fi

fmt:
	gofmt -w $$(git ls-files '*.go')

## regen: after adding or changing a tool, every file generated from the
## tools: the note book's schemas (notebook/toolschemas.json), then the
## sample events' expected answers (events/*.expected.json, the function's;
## notebook/events/*.expected.json, the note book's), and docs/clients.md
## from the client matrix; then examples/counter's deploy kit (its
## template.yaml and mcp.mk, by cmd/mcp-sam, after template.yaml or the
## Makefile changed), its events (make event) and their expected answers
## (under the emulator); review the diff
.PHONY: regen
regen: $(RIE) $(GOBIN)/local-kms tools/node_modules/.installed java
	$(GO) test ./notebook -count=1 -run '^TestToolSchemas$$' -update
	$(GO) test ./functions/mcp -count=1 -run '^TestEventsInProcess$$' -update
	$(GO) test ./notebook -count=1 -run '^TestEventsInProcess$$' -update
	cd interop && $(GO) test -count=1 -run '^TestClientsDoc$$' -update .
	$(GO) test -tags integration -c -o $(TOOLS)/notebook.costs.test ./notebook && cd notebook && unshare -n -- sh -c 'ip link set lo up && exec "$$0" -test.count=1 -test.run=^TestCostTable$$ -update' $(TOOLS)/notebook.costs.test
	$(MAKE) --no-print-directory -C examples/counter mcp-sam events
	cd examples && $(GO) test ./counterkit -count=1 -run '^TestCounterEvents$$' -update

## fork-check: what a fork does, checked (CI runs it after make test): in
## a copy of the repository, functions/mcp serves a foreign tool instead of
## the note book, then make regen and the suite there (fork-suite) must pass
## and leave the copy's tree clean (e2e/forkcheck; FORK_TARGET=test for all
## of make test, FORK_TARGET=unit for a quicker look)
FORK_TARGET ?= fork-suite
.PHONY: fork-check
fork-check:
	cd e2e && $(GO) run ./forkcheck -root .. -target $(FORK_TARGET)

## api: the public API against the last release's (docs/compatibility.md)
.PHONY: api api-baseline
api: $(GOBIN)/apidiff
	@$(GO) run ./internal/testenv/apicheck -apidiff $(GOBIN)/apidiff

## api-baseline: at a release, the API baseline of RELEASE (api/RELEASE.apidiff)
api-baseline: $(GOBIN)/apidiff
	@test -n "$(RELEASE)" || { echo "usage: make api-baseline RELEASE=v0.2.0"; exit 2; }
	@$(GO) run ./internal/testenv/apicheck -apidiff $(GOBIN)/apidiff -write '$(RELEASE)'

## fuzz: every fuzz target for FUZZTIME each
fuzz:
	@set -e; for pkg in ./pkg/stateless ./pkg/reqstate ./pkg/apigw ./pkg/observe ./pkg/auth ./pkg/tasks ./internal/canon ./internal/jsonscan; do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			$(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=5s $$pkg; \
		done; \
	done

## bench: side-by-side benchmarks against the peers (bench/ module)
bench:
	cd bench && $(GO) run ./report

clean:
	rm -rf $(TOOLS) build .aws-sam
