# ramanserve: make run (server on :5556/:5555) and make test are the two
# commands a newcomer needs. Every target installs what it needs.

SHELL         := /bin/bash
GO            ?= go
PY            := /usr/bin/python3
REDOCLY       := npx --yes @redocly/cli@2.77.0
DEBIAN_PKGS   := python3-zmq python3-sklearn python3-joblib python3-msgpack python3-lz4 python3-numpy python3-scipy python3-venv python3-pip python3-setuptools
# What the tests' Python peers and references import (scipy.linalg: the
# helper module examples/python/ramanserve_preprocessing.py, which the
# parity references import; ensurepip, pip and setuptools: installing
# clients/python into a virtual environment without a package index).
PY_IMPORTS    := zmq, sklearn, joblib, msgpack, lz4.frame, numpy, scipy.signal, scipy.linalg, scipy.sparse, ensurepip, pip, setuptools
FUZZTIME      ?= 30s
# Minimising a large new input (a 300 KB model file) can take minutes and
# shows as 0 execs/s; bound it so the time goes to fuzzing.
FUZZMINIMIZE  ?= 5s
# -race: the server is concurrent through and through (hot swap, ZMTP
# sessions, jobs); every test run doubles as a data-race check. What only
# proves scale runs shorter under -race (platform/race) and at full size in
# make bench. -timeout is per package and only catches a hang: the
# longest, the conformance suite, takes 4 to 6 minutes under -race alone
# on a quiet 2-core machine, 8 to 12 beside the other packages in make
# test, and over 20 beside a second make test (make test-under-load) on
# the slower of the machines it has run on, so it gets 40
# (CONFORMANCE_TIMEOUT); make test as a whole should take at most 10.
# SQLite (modernc.org/sqlite, C translated
# to Go) is most of the race detector's cost in the store tests, but it
# cannot be left uninstrumented with -gcflags=modernc.org/...=-race=false:
# tried, the detector reported a race inside encoding/json's cache, whose
# accesses are synchronised: generic code that SQLite shares with the
# standard library (sync.Map's) can be linked in its uninstrumented copy.
GOTEST_FLAGS  ?= -race -count=1 -timeout 20m
CONFORMANCE_TIMEOUT ?= 40m

.PHONY: all build run run-fleet bench-fleet bench-fleet-in-cluster test test-beside-go test-go test-go-in-cluster deps-postgres test-numeric test-quick test-under-load deps-r r-reference test-r rule-evidence test-examples test-clients test-prism test-opcua test-browser test-prometheus deps deps-c deps-node deps-browser deps-prometheus generate check-generated docs-bundle docs-bundle-copy check-docs-bundle lint vet bench fuzz demo clean

all: build

build:
	$(GO) build -buildvcs=auto -o bin/ramanserve ./cmd/ramanserve

## run: the server on :5556 (HTTP) and :5555 (ZeroMQ) with a file registry in ./var/registry
run: build
	./bin/ramanserve

## deps: Debian's Python packages for the real libzmq and scikit-learn peers used by the tests,
## Debian's chromium for the review page's browser test, Debian's prometheus (with promtool),
## curl for the TLS tests, and Debian's postgresql for the fleet's store
deps: deps-browser deps-prometheus deps-curl deps-postgres
	@if $(PY) -c 'import $(PY_IMPORTS)' 2>/dev/null; then \
		echo "deps: Debian python packages present"; \
	else \
		echo "deps: installing $(DEBIAN_PKGS)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(DEBIAN_PKGS) >/dev/null; \
		$(PY) -c 'import $(PY_IMPORTS)'; \
	fi

## deps-c: Debian's libzmq and msgpack-c development packages for the C example
# msgpack-c's package is libmsgpack-c-dev from trixie on (pkg-config
# msgpack-c), libmsgpack-dev before (bookworm; pkg-config msgpack).
deps-c:
	@if command -v cc >/dev/null && pkg-config --exists libzmq && { pkg-config --exists msgpack-c || pkg-config --exists msgpack; }; then \
		echo "deps-c: cc, libzmq and msgpack-c present"; \
	else \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq; \
		MSGPACK=$$(apt-cache show libmsgpack-c-dev >/dev/null 2>&1 && echo libmsgpack-c-dev || echo libmsgpack-dev); \
		echo "deps-c: installing gcc pkg-config libzmq3-dev $$MSGPACK"; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends gcc libc6-dev pkg-config libzmq3-dev $$MSGPACK >/dev/null; \
		pkg-config --exists libzmq && { pkg-config --exists msgpack-c || pkg-config --exists msgpack; }; \
	fi

## deps-browser: Debian's chromium, the headless browser of test-browser
deps-browser:
	@if command -v chromium >/dev/null; then \
		echo "deps-browser: $$(chromium --version 2>/dev/null | head -1) present"; \
	else \
		echo "deps-browser: installing chromium"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null; \
		command -v chromium >/dev/null; \
	fi

## deps-prometheus: Debian's prometheus and promtool, for test-prometheus
# Only the binaries are wanted: the package's service must not be left
# running (it would hold :9090). A policy-rc.d that denies every start
# (the one Docker images ship, or a temporary one of ours) keeps the
# postinst from starting it; on a systemd host it is also disabled.
POLICY_RC_D := /usr/sbin/policy-rc.d
deps-prometheus:
	@if command -v prometheus >/dev/null && command -v promtool >/dev/null; then \
		echo "deps-prometheus: $$(prometheus --version 2>&1 | head -1) present"; \
	else \
		echo "deps-prometheus: installing prometheus (its service is not started)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		ADDED=; \
		if [ ! -e $(POLICY_RC_D) ]; then \
			printf '#!/bin/sh\n# make deps-prometheus: no service starts while it installs\nexit 101\n' | $$SUDO tee $(POLICY_RC_D) >/dev/null && $$SUDO chmod 755 $(POLICY_RC_D) && ADDED=1; \
		fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
		RC=$$?; \
		if [ -n "$$ADDED" ]; then $$SUDO rm -f $(POLICY_RC_D); fi; \
		if [ -d /run/systemd/system ]; then $$SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true; fi; \
		[ $$RC = 0 ] && command -v prometheus >/dev/null && command -v promtool >/dev/null; \
	fi

## deps-node: node and npm for test-clients, from Debian when missing
# NODE_MIN is the oldest node the pinned generators accept: the "engines"
# of @hey-api/openapi-ts in conformance/clients/testdata/ts/package-lock.json.
# Debian 13 (trixie) ships it; Debian 12's nodejs is 18, too old: there,
# install NodeSource's nodejs 20 or 22 (which brings npm) and run again.
NODE_MIN ?= 20.19
deps-node:
	@node_ok() { command -v node >/dev/null && node -e 'const [a,b]=process.versions.node.split(".").map(Number), [x,y]=process.argv[1].split(".").map(Number); process.exit(a>x||(a===x&&b>=y)?0:1)' $(NODE_MIN); }; \
	if node_ok && command -v npm >/dev/null; then \
		echo "deps-node: node $$(node --version) and npm $$(npm --version) present"; \
	else \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		PKGS="$$(command -v node >/dev/null || echo nodejs) $$(command -v npm >/dev/null || echo npm)"; \
		if [ -n "$${PKGS// /}" ]; then \
			echo "deps-node: installing $$PKGS"; \
			$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$PKGS >/dev/null; \
		fi; \
		node_ok && command -v npm >/dev/null || { echo "deps-node: node >= $(NODE_MIN) and npm are needed; found node $$(node --version 2>/dev/null || echo none)" >&2; exit 1; }; \
	fi

.PHONY: deps-curl deps-systemd test-systemd
## deps-systemd: systemd-analyze, from Debian's systemd, for the unit's checks (verify, security)
deps-systemd:
	@if command -v systemd-analyze >/dev/null; then \
		echo "deps-systemd: $$(systemd-analyze --version | head -1) present"; \
	else \
		echo "deps-systemd: installing systemd (for systemd-analyze)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends systemd >/dev/null; \
		command -v systemd-analyze >/dev/null; \
	fi

## test-systemd: systemd-analyze verify on deploy/ramanserve.service, and its security exposure
## (--offline=yes) no worse than the score the README states
test-systemd: deps-systemd
	set -o pipefail; RAMANSERVE_TEST_SYSTEMD=1 $(GO) test -count=1 -run '^TestUnit' -v ./cmd/ramanserve | grep -vE '^(=== (RUN|PAUSE|CONT|NAME))'

## deps-curl: curl, the HTTPS client of the management channel's TLS tests (conformance/tls_test.go)
## deps-postgres: Debian's postgresql server (the tests start a throw-away cluster of their own,
## .ci/postgres) and openssl for the cluster's test certificates
deps-postgres:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v openssl >/dev/null; then \
		echo "deps-postgres: $$(ls -d /usr/lib/postgresql/*/bin | head -1) present"; \
	else \
		echo "deps-postgres: installing postgresql openssl"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends postgresql openssl >/dev/null; \
		ls /usr/lib/postgresql/*/bin/initdb >/dev/null; \
	fi

deps-curl:
	@if command -v curl >/dev/null; then \
		echo "deps-curl: $$(curl --version | head -1 | cut -d' ' -f1-2) present"; \
	else \
		echo "deps-curl: installing curl"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends curl >/dev/null; \
		command -v curl >/dev/null; \
	fi

## test-examples: compile examples/c (-Wall -Wextra -Werror) and run it against a real server
# CI=true: deps-c has just installed the toolchain, so the test must not skip.
test-examples: deps-c
	set -o pipefail; CI=true $(GO) test -count=1 -run '^TestExampleC' -v ./conformance | grep -vE '^(=== (RUN|PAUSE|CONT|NAME))'

## test-browser: the review page in headless Chromium, without and with lab results, a batch's page against its control bands,
## the page of one spectrum (no console error, every plot drawn, a full-page PNG), and GET /docs (every operation rendered,
## no console error, nothing fetched); REPORT_PNG=docs/report.png refreshes the README's screenshot,
## BATCH_PNG=docs/batch-report.png and SPECTRUM_PNG=docs/spectrum-report.png those of docs/evidence.md
REPORT_PNG ?=
BATCH_PNG ?=
SPECTRUM_PNG ?=
test-browser: deps-browser
	set -o pipefail; RAMANSERVE_TEST_BROWSER=1 RAMANSERVE_REPORT_PNG=$(if $(REPORT_PNG),$(abspath $(REPORT_PNG))) RAMANSERVE_BATCH_PNG=$(if $(BATCH_PNG),$(abspath $(BATCH_PNG))) RAMANSERVE_SPECTRUM_PNG=$(if $(SPECTRUM_PNG),$(abspath $(SPECTRUM_PNG))) $(GO) test -count=1 -timeout 5m -run '^Test(ReportPage.*|BatchPage|SpectrumPage.*|DocsPage)InChromium$$' -v ./conformance/browser | grep -vE '^(=== (RUN|PAUSE|CONT|NAME))'

## test-prometheus: a real Prometheus scrapes an in-process server (bearer token on), evaluates the
## alert and recording rules, reads ramanserve_predictions_total back and answers every query of
## deploy/grafana/ramanserve.json with data; promtool checks /metrics, the rules and their unit tests
# CI=true: deps-prometheus has just installed prometheus, so the test must not skip.
test-prometheus: deps-prometheus
	set -o pipefail; CI=true RAMANSERVE_TEST_PROMETHEUS=1 $(GO) test -race -count=1 -timeout 3m -v ./conformance/prometheus | grep -vE '^(=== (RUN|PAUSE|CONT|NAME))'

## generate: regenerate gen/ from api/openapi.yaml
generate:
	cd gen && $(GO) generate .

## check-generated: fail when gen/ differs from what api/openapi.yaml generates
check-generated:
	@tmp=$$(mktemp -d); cp gen/api.gen.go $$tmp/committed.go; \
	(cd gen && $(GO) generate .) ; \
	if ! cmp -s gen/api.gen.go $$tmp/committed.go; then \
		diff -u $$tmp/committed.go gen/api.gen.go | head -40; cp $$tmp/committed.go gen/api.gen.go; \
		echo "gen/ is stale: run 'make generate' and commit"; rm -rf $$tmp; exit 1; \
	fi; rm -rf $$tmp; echo "check-generated: gen/ matches api/openapi.yaml"

## docs-bundle: copy the standalone build of the Redoc pinned in server/apidocs/build/package-lock.json
## into server/apidocs/redoc, which the binary embeds for GET /docs (committed, so that building needs only Go)
DOCS_BUILD := server/apidocs/build
DOCS_ASSET := server/apidocs/redoc
docs-bundle: deps-node
	cd $(DOCS_BUILD) && npm ci --no-audit --no-fund --loglevel=error
	$(MAKE) --no-print-directory DOCS_OUT=$(DOCS_ASSET) docs-bundle-copy

# The source map's comment is dropped: the page inlines the bundle and
# has no map to offer.
docs-bundle-copy:
	mkdir -p $(DOCS_OUT)
	sed '/^\/\/# sourceMappingURL=/d' $(DOCS_BUILD)/node_modules/redoc/bundles/redoc.standalone.js > $(DOCS_OUT)/redoc.standalone.js
	cp $(DOCS_BUILD)/node_modules/redoc/bundles/redoc.standalone.js.LICENSE.txt $(DOCS_BUILD)/node_modules/redoc/LICENSE $(DOCS_OUT)/

## check-docs-bundle: fail when server/apidocs/redoc is not what docs-bundle makes from the pinned package
check-docs-bundle: deps-node
	@cd $(DOCS_BUILD) && npm ci --no-audit --no-fund --loglevel=error
	@tmp=$$(mktemp -d); $(MAKE) --no-print-directory -s DOCS_OUT=$$tmp docs-bundle-copy; \
	if ! diff -rq $$tmp $(DOCS_ASSET) >/dev/null; then \
		diff -rq $$tmp $(DOCS_ASSET); rm -rf $$tmp; echo "server/apidocs/redoc is stale: run 'make docs-bundle' and commit"; exit 1; \
	fi; rm -rf $$tmp; echo "check-docs-bundle: server/apidocs/redoc matches the pinned redoc"

## lint: OpenAPI linter (0 errors), gofmt and go vet
lint: vet
	cd api && $(REDOCLY) lint --config redocly.yaml openapi.yaml

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## deps-r: Debian's r-cran-pls (it brings R), for the R pls reference of the cross-validation
deps-r:
	@if Rscript -e 'library(pls)' >/dev/null 2>&1; then \
		echo "deps-r: $$(Rscript -e 'cat(R.version.string, "pls", as.character(packageVersion("pls")))' 2>/dev/null) present"; \
	else \
		echo "deps-r: installing r-cran-pls"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends r-cran-pls >/dev/null; \
		Rscript -e 'library(pls)' >/dev/null; \
	fi

## r-reference: rewrite trainer/testdata/rpls (the data sets and R pls's CV curves and component choices)
## run-fleet: three replicas on one throw-away PostgreSQL database (127.0.0.1:5556, :5566, :5576;
## prediction ports :5555, :5565, :5575); Ctrl-C stops them and removes the database
run-fleet: build deps-postgres
	.ci/postgres run -- deploy/run-fleet bin/ramanserve

r-reference: deps-r
	Rscript trainer/testdata/rpls/reference.R trainer/testdata/rpls

## test-numeric: the model core's tests without the race detector, in full
# Most of ./inference's tests compute on one goroutine: the race detector
# has nothing to watch there and runs them five to ten times slower, so
# under it they skip (numericOnly) and run here instead, with the checks
# that need full speed or a full sample (the 95 % limits' band over every
# calibration, allocation counts). test-go still runs the package under
# the detector for the rest. CI=true: deps has installed the Python that
# its NumPy and SciPy cross-checks need, so they must not skip.
test-numeric: deps
	CI=true $(GO) test -count=1 -timeout 10m ./inference

## test-r: regenerate the R pls reference in a temporary folder and fail on any difference from the committed one
# The parity test itself (ours against the committed reference) is part of test-go.
test-r: deps-r
	set -o pipefail; RAMANSERVE_TEST_R=1 $(GO) test -count=1 -run '^TestRReferenceIsCurrent$$' -v ./trainer | grep -vE '^(=== (RUN|PAUSE|CONT|NAME))'

## rule-evidence: held-out RMSEP of every component rule and segment type on gasoline, yarn and synthetic spectra
## (the table in api/openapi.yaml, TrainingMeta's component_rule)
rule-evidence:
	set -o pipefail; RAMAN_RULE_EVIDENCE=1 $(GO) test -count=1 -timeout 20m -run '^TestRuleEvidence$$' -v ./trainer | grep -vE '^(=== RUN|PASS$$)'

## test: everything CI runs
# The Go packages under the race detector (test-go) keep both cores busy
# for most of the run; the other suites mostly wait on programs of their
# own (npm, Chromium, Prometheus, node-opcua, Prism, R), so they run beside
# test-go, one after another, rather than after it. --output-sync keeps
# each suite's output in one piece. Every deps-* target runs first, one
# after another: two apt-get runs at once would fight over dpkg's lock.
test: deps deps-c deps-r deps-systemd deps-node check-generated check-docs-bundle lint
	$(MAKE) --no-print-directory -j2 --output-sync=target test-go test-beside-go
test-beside-go: test-numeric test-r test-examples test-clients test-prism test-opcua test-browser test-prometheus test-systemd

# The conformance suite, the longest package, runs beside the others
# rather than after them: its test binary is built first (so that the two
# runs do not both compile the packages it shares with them), then it
# runs in the background while the other packages run, and its output is
# shown when both are done. It runs verbose so that its closing line, how
# many responses were validated against api/openapi.yaml, shows in every
# run; passing tests' own lines are filtered out.
CONFORMANCE_FILTER := ^(=== (RUN|PAUSE|CONT|NAME)|[[:space:]]*--- PASS)
OTHER_PACKAGES      = $$($(GO) list $(LONGEST_FIRST) ./... | grep -vE '/conformance(/browser|/prometheus)?$$')
# The packages whose tests take longest, named first: go test starts
# packages in the order they are named, and a long one started last runs
# alone at the end while the other core idles. (go list names each
# package once.) Three at a time (-p 3) rather than one a core: the
# longest ones (server, app, opcua, client, the generated clients) spend
# much of their time waiting on timers, sockets and programs of their own.
LONGEST_FIRST       := ./server ./app ./evidence/predlog/sqlitelog ./server/opcua ./conformance/clients ./client \
                       ./evidence/reconcile ./trainer/jobs ./inference/sklearn ./server/zmtp ./inference/preprocess
# Both runs share one throw-away PostgreSQL cluster (.ci/postgres starts it
# and removes it afterwards); each test takes a database of its own in it.
# RAMANSERVE_TEST_POSTGRES_REQUIRED turns a missing cluster into a failure
# rather than a skip.
test-go: deps-postgres
	$(GO) test $(GOTEST_FLAGS) -c -o /dev/null ./conformance
	RAMANSERVE_TEST_POSTGRES_REQUIRED=1 .ci/postgres run -- $(MAKE) --no-print-directory test-go-in-cluster
test-go-in-cluster:
	@set -o pipefail; out=$$(mktemp); \
	echo "$(GO) test $(GOTEST_FLAGS) -timeout $(CONFORMANCE_TIMEOUT) -skip '^TestExampleC' -v ./conformance (in the background)"; \
	{ $(GO) test $(GOTEST_FLAGS) -timeout $(CONFORMANCE_TIMEOUT) -skip '^TestExampleC' -v ./conformance 2>&1 | grep -vE '$(CONFORMANCE_FILTER)' >$$out; echo $$? >$$out.rc; } & \
	echo "$(GO) test $(GOTEST_FLAGS) -p 3 <every package but the conformance suites>"; \
	$(GO) test $(GOTEST_FLAGS) -p 3 $(OTHER_PACKAGES); others=$$?; \
	wait; echo "== ./conformance"; cat $$out; conformance=$$(cat $$out.rc); rm -f $$out $$out.rc; \
	[ $$others = 0 ] && [ $$conformance = 0 ]

## test-quick: the inner loop: every package's tests, the conformance suite's included, without
## the race detector; no browser, npm, Prometheus or C toolchain (those tests skip)
# -short shortens what only runs long (the connection-cap soak from 60 s
# to 10 s, the cancel race to 50 rounds, the retention streams to a
# tenth), and skips four long process tests of the conformance suite (the
# syscall filter under strace, training at the memory budget, kill -9
# rounds of the log, the silent connection flood) and the tests
# that start a PostgreSQL cluster; it checks the diagnostic limits on one
# calibration and kills the log's writer in one round; make test runs them
# all. -parallel 6 and -p 3: most of the conformance suite's parallel tests,
# and packages such as server, wait on processes and timers of their own
# rather than use the CPU. The conformance suite, the longest, starts
# first, beside the others (as in test-go), its output shown at the end;
# its test binary is built once and run as it is (go vet is make lint's).
test-quick:
	@set -o pipefail; out=$$(mktemp); bin=$$out.conformance.test; \
	$(GO) test -c -o $$bin ./conformance || exit 1; \
	{ (cd conformance && $$bin -test.short -test.count=1 -test.parallel 6 -test.timeout 3m -test.skip '^TestExampleC') >$$out 2>&1; \
	  rc=$$?; [ $$rc = 0 ] && echo "ok  	ramanserve/conformance" >>$$out || echo "FAIL	ramanserve/conformance" >>$$out; echo $$rc >$$out.rc; } & \
	$(GO) test -short -count=1 -p 3 -parallel 6 -timeout 3m $(QUICK_PACKAGES); others=$$?; \
	wait; cat $$out; conformance=$$(cat $$out.rc); rm -f $$out $$out.rc $$bin; \
	[ $$others = 0 ] && [ $$conformance = 0 ]
QUICK_PACKAGES = $$($(GO) list $(LONGEST_FIRST) ./... | grep -vE '/conformance(/browser|/prometheus|/clients)?$$')

## test-under-load: make test three times in a row while a second make test runs at the same time
## in a clone of this repository (its own ports and directories); closes with "N passed, N failed".
## UNDER_LOAD_TARGET=test-quick UNDER_LOAD_RUNS=1 for a short check of the machinery,
## UNDER_LOAD_FLAGS=--dry-run to see what it would run.
UNDER_LOAD_TARGET ?= test
UNDER_LOAD_RUNS   ?= 3
UNDER_LOAD_FLAGS  ?=
test-under-load:
	UNDER_LOAD_TARGET=$(UNDER_LOAD_TARGET) UNDER_LOAD_RUNS=$(UNDER_LOAD_RUNS) .ci/under-load $(UNDER_LOAD_FLAGS)

## test-clients: generate the Go and TypeScript clients of api/openapi.yaml as a
## consumer would, compile them and smoke-test each against an in-process server;
## and the console package clients/typescript: its committed types against the
## contract, tsc --strict, its smoke program against an in-process server.
## The generators come pinned: oapi-codegen from go.mod, the npm packages from
## conformance/clients/testdata/ts/package-lock.json and
## clients/typescript/package-lock.json (npm ci).
test-clients: deps-node
	cd conformance/clients/testdata/ts && npm ci --no-audit --no-fund --loglevel=error
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error
	set -o pipefail; RAMANSERVE_TEST_CLIENTS=1 $(GO) test $(GOTEST_FLAGS) -v -run '^(TestGeneratedClients|TestTypeScriptPackage)$$' ./conformance/clients | grep -vE '^(=== (RUN|PAUSE|CONT|NAME)|[[:space:]]*--- PASS)'

## test-prism: every operation of the contract through Prism's validating proxy (prism proxy --errors):
## 0 violations of a request or a response; then the suite's tests below with the suite's server behind
## prism proxy (without --errors): 0 response violations. Prism pinned in conformance/testdata/prism/package-lock.json (npm ci)
PRISM_DIR := conformance/testdata/prism
# The suite's tests whose requests all go to the suite's server and whose
# checks hold behind a proxy. Left out: the tests of servers or processes
# of their own, of bodies that are not JSON at all (Prism answers those
# itself, TestErrorEnvelopeOnEveryFailure, TestEvidenceErrors), of CORS and
# request ids (Prism adds headers of its own), of slow and cut bodies, and
# of timing (TestConcurrentLoadsOneWins needs its 20 loads inside one
# slow load's window, which the proxy's delay can stretch).
PRISM_SUITE_TESTS := TestHealth|TestHealthDegradedWhenRegistryNotWritable|TestHTTPNotAnHTMLBody|TestFileLoadPathRules|TestFileLoadVersionExists|TestCorruptFilesAreRefused|TestModelDetailDeleteAndStatusMismatch|TestModelInfoMatchesHTTP|TestReportRoutes|TestOpenAPIDocumentsServed|TestTrainingRejectsBadCSV|TestTrainingRejectsBadUpload|TestTrainingJobLifecycle|TestTrainingOptionErrors|TestTrainingRuleSegmentsAndAnnotations|TestTrainingListPagesFilterAndRestart|TestCancelQueuedRunningFinished|TestShadowParity|TestLabPostsAreIdempotent|TestPredictionsExport|TestScikitLearnModelsServeTheSameNumbers|TestHostileModelFileIsRefused
test-prism: deps-node
	cd $(PRISM_DIR) && npm ci --no-audit --no-fund --loglevel=error
	set -o pipefail; RAMANSERVE_TEST_PRISM=$(abspath $(PRISM_DIR))/node_modules/.bin/prism $(GO) test -count=1 -timeout 5m -run '^TestPrismProxy$$' -v ./conformance | grep -vE '$(CONFORMANCE_FILTER)'
	set -o pipefail; RAMANSERVE_TEST_PRISM_SUITE=$(abspath $(PRISM_DIR))/node_modules/.bin/prism $(GO) test -count=1 -short -timeout 10m -run '^($(PRISM_SUITE_TESTS))$$' -v ./conformance | grep -vE '$(CONFORMANCE_FILTER)'

## test-opcua: node-opcua, an independent OPC UA client, against the OPC UA server (docs/opcua.md):
## browse, read, write refused, subscribe at 100 ms while predicts arrive on ZeroMQ, over None,
## Basic256Sha256 SignAndEncrypt and Aes128_Sha256_RsaOaep with a user; node-opcua pinned in
## app/testdata/opcua/package-lock.json (npm ci)
# Without the race detector: the interop is the point here, and test-go
# runs the same server under it (./app's and ./server/opcua's tests).
OPCUA_NODE_DIR := app/testdata/opcua
test-opcua: deps-node
	cd $(OPCUA_NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	RAMANSERVE_TEST_OPCUA=1 $(GO) test -count=1 -timeout 10m -run '^TestOPCUANodeInterop$$' -v ./app

## bench: every figure of docs/performance.md
bench: deps deps-c build
	@echo "== server-side cost of one predict (decode, validate, predict, diagnostics, encode): raw, with savgol(15,2,1)+snv (goal 25 us), with als_baseline (goal 150 us)"
	$(GO) test -run '^$$' -bench 'Predict2048' -benchmem ./server/channel ./inference
	@echo "== metrics: recording one predict (counts, latency, reduced T2/Q, confidence; goal 1 us, 0 allocs); Predict2048Metrics above is Predict2048 with them"
	$(GO) test -run '^$$' -bench 'RecordPredict' -benchmem ./server/metrics
	@echo "== preprocessing one 2048-point spectrum in place (savgol+snv, despike+savgol+snv, als_baseline; cpu-ns/op excludes time other processes held the cores)"
	$(GO) test -run '^$$' -bench 'Apply' -benchmem ./inference/preprocess
	@echo "== codec"
	$(GO) test -run '^$$' -bench . -benchmem ./server/codec
	@echo "== management: the web layer per request (request id, CORS, access log); one page of GET /training among 20,000 jobs"
	$(GO) test -run '^$$' -bench 'WebLayer' -benchmem ./server
	$(GO) test -run '^$$' -bench 'ListPage' -benchmem ./trainer/jobs
	@echo "== review page: 2000 training rows x 3 analytes, two regions, without and with a lab section of 2000 results in 100 batches (render time, page bytes)"
	$(GO) test -run '^$$' -bench 'Render2000' -benchmem ./server/report
	RAMAN_BENCH_PERFORMANCE=1 $(GO) test -count=1 -run '^TestPerformanceAtScale$$' -v ./evidence/reconcile | grep -E '^([[:space:]]+performance_scale_test|---|ok|FAIL)'
	@echo "== batch trajectories over 100,000 logged predictions, real HTTP: GET /batches/{batch_id} of 1,000 and of 10,000 points, the page against 3 references, a page of GET /batches"
	$(GO) test -run '^$$' -bench 'GetBatch100k' -benchtime 20x ./app
	@echo "== the lab's agreement for /metrics, recomputed by a lab post that matches: every version over 45,000 matched results (cpu-ms/op)"
	$(GO) test -run '^$$' -bench 'AllVersions45000' -benchtime 3x -benchmem ./evidence/reconcile
	@echo "== robustness: RMSEP of a raw and a recipe model with faults injected into the test spectra only; claimed confidence / observed fraction within tolerance"
	$(GO) test -count=1 -run '^TestRobustnessUnderFaults$$' -v ./inference | grep -vE '^(=== RUN|PASS$$)'
	@echo "== training: 2000 x 2048, CV over 1..20 components, against scikit-learn"
	RAMAN_BENCH_TRAIN=1 $(GO) test -count=1 -run TestTrainingSpeedVsSklearn -v ./trainer | grep -E '^(training|---|ok|FAIL)'
	@echo "== 200 MB training upload: server memory"
	RAMAN_BENCH_UPLOAD=1 $(GO) test -count=1 -run TestUploadMemory200MB -v ./conformance | grep -E '^(upload|---|ok|FAIL)'
	@echo "== four concurrent 100 MB uploads of 1-character cells against a 1 GiB training memory budget: server peak RSS"
	RAMAN_BENCH_UPLOAD_BUDGET=1 $(GO) test -count=1 -run TestConcurrentUploadsStayInBudget -v ./conformance | grep -E '^(upload|---|ok|FAIL)'
	@echo "== 1,000 prediction peers stalled in near-1 MiB frames: server RSS against the documented bound"
	$(GO) test -count=1 -run TestChannelStalledFramesHoldLittleMemory -v ./conformance | grep -E '^(channel bounds|---|ok|FAIL)'
	@echo "== the runs that make test shortens under the race detector, at full size without it: prediction log retention (200k records; 20k with spectra), kill -9 rounds of a recording child, two processes posting to the lab store, 60 hot swaps under load, 60 s of health checks through a full connection cap, 5 kill -9 rounds of the prediction log's promise at full load"
	set -o pipefail; $(GO) test -count=1 -run '^(TestRetentionBySize|TestCrashSafety|TestSecondProcess)$$' -v ./evidence/predlog/sqlitelog ./evidence/labstore | grep -E '^(---|ok|FAIL|[[:space:]]+(retention|process)_test)'
	set -o pipefail; $(GO) test -count=1 -run '^(TestHotSwapUnderLoad|TestHealthThroughFullConnectionCap|TestPredictionLogKeepsItsPromise)$$' -v ./conformance | grep -E '^(---|ok|FAIL|[[:space:]]+(swap|lifecycle|predlog_crash)_test)'
	@echo "== prediction channel: latency and throughput against the Python reference, ramanserve as its own process"
	$(GO) run ./cmd/ramanbench -server bin/ramanserve
	@echo "== the same with ramanserve inside the benchmark process"
	$(GO) run ./cmd/ramanbench
	@echo "== the tail against the transport floor: C libzmq REQ clients with pre-encoded 2048-point predicts against ramanserve (log and metrics on) and against a no-work C libzmq REP, same run, 3 runs (goals: 8-client p95 <= 1.3x the floor's, throughput >= 0.95x, 1-client p50 <= the floor's + 40 us)"
	$(GO) run ./cmd/ramanbench -floor -server bin/ramanserve -duration 5s -runs 3
	@echo "== OPC UA on the hot path: one closed-loop client against ramanserve without -opcua-addr and with it and 10 subscribers at 100 ms, alternating blocks (goal: p95 within 5 %)"
	$(GO) run ./cmd/ramanbench -opcua -server bin/ramanserve -duration 4s -blocks 30
	@echo "== prediction log and shadow scoring on the hot path: 8 clients at full rate against two ramanserve processes in alternating blocks, the log's figures and a shadow against neither, then the same with -log-spectra (goal: p95 within 10 %, 0 errors)"
	$(GO) run ./cmd/ramanbench -evidence cost -server bin/ramanserve -duration 30s -blocks 10 -evidence-on-flags ""
	$(GO) run ./cmd/ramanbench -evidence cost -server bin/ramanserve -duration 30s -blocks 10
	@echo "== 1,000 predicts/s for 60 s, open loop, to a ramanserve process with -log-spectra and a shadow: records dropped by the log (GET /health) and by the shadow (GET /model/shadow) (goal: 0 and 0)"
	$(GO) run ./cmd/ramanbench -evidence paced -server bin/ramanserve -duration 60s -rate 1000
	@echo "== prediction log retention: 1,000,000 records (500,000 spectra, active + shadow) through a 64 MiB bound in the package; 1,000,000 predicts to a ramanserve process with -prediction-log-max-bytes 16 MiB; peak size of the log's files (db, WAL, shm) against the bound"
	$(GO) test -run '^$$' -bench 'RetentionSoak' -benchtime 1x ./evidence/predlog/sqlitelog
	@echo "== prediction log store: one record appended alone and in a batch of the writer's size (no spectra; cpu-ns/record is the process's CPU, which other processes inflate less than the wall clock); one 2048-point spectrum compressed for the log (-log-spectra)"
	$(GO) test -run '^$$' -bench 'Append|EncodeSpectrum' -benchmem ./evidence/predlog/sqlitelog
	$(GO) run ./cmd/ramanbench -evidence soak -server bin/ramanserve -predictions 1000000 -max-bytes 16777216
	@echo "== CurveZMQ, server side: transport CPU of one 2048-point predict (37 KiB in, 0.5 KiB out) with NULL and with CURVE; the crypto alone (XSalsa20-Poly1305); one handshake; Salsa20, Poly1305 and a whole box over 37 KiB, x/crypto's against the vector ones"
	$(GO) test -run '^$$' -bench 'PredictTransportCPU|ServerPredictCrypto|Handshake' -benchmem ./server/zmtp ./server/zmtp/curve
	$(GO) test -run '^$$' -bench . ./server/zmtp/curve/internal/secretbox
	@echo "== CurveZMQ: what CURVE adds to a 2048-point predict round trip against NULL (goal: p50 <= 30 us), the Go client and pyzmq (libzmq + libsodium), ramanserve as its own processes"
	$(GO) run ./cmd/ramanbench -curve -server bin/ramanserve
	$(MAKE) --no-print-directory bench-fleet

## bench-fleet: the fleet's figures on a throw-away PostgreSQL cluster (docs/fleet.md); part of make bench
bench-fleet: build deps-postgres
	RAMANSERVE_TEST_POSTGRES_REQUIRED=1 .ci/postgres run -- $(MAKE) --no-print-directory bench-fleet-in-cluster
bench-fleet-in-cluster:
	@echo "== fleet: 3 replicas, 8 clients each, 50 swaps from random replicas; PostgreSQL killed for 30 s under load; a training runner killed with kill -9; 100 load races"
	set -o pipefail; $(GO) test -count=1 -run '^TestFleet(SwapsUnderLoad|SurvivesTheDatabaseKilled|TrainingSurvivesItsRunnerKilled)$$' -v ./conformance | grep -E '^(---|ok|FAIL|[[:space:]]+fleet_test)'
	set -o pipefail; $(GO) test -count=1 -run '^TestFleetLoadRace$$' -v ./app | grep -E '^(---|ok|FAIL|[[:space:]]+fleet_test)'
	@echo "== the hot path on the fleet's store against the embedded one: 8 clients at full rate, alternating blocks (goal: p95 within 5 %)"
	$(GO) run ./cmd/ramanbench -evidence store -store "$$RAMANSERVE_TEST_POSTGRES" -server bin/ramanserve -duration 30s -blocks 10
	@echo "== the prediction log of a fleet: 3 replicas x 1,000 predicts/s for 60 s (goal: 180,000 rows, 0 dropped, every row visible from every replica)"
	$(GO) run ./cmd/ramanbench -evidence fleetlog -store "$$RAMANSERVE_TEST_POSTGRES" -server bin/ramanserve -duration 60s -rate 1000 -clients 4
	@echo "== store copy: 20 models, 1,000 jobs, 1,000,000 log rows into PostgreSQL"
	set -o pipefail; RAMAN_BENCH_STORE_COPY=1 $(GO) test -count=1 -timeout 30m -run '^TestStoreCopyFigure$$' -v ./app/storecopy | grep -vE '^(=== RUN|PASS$$)'

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg || exit 1; \
		done; \
	done

## demo: train on synthetic spectra against a running server, load the model, predict
demo:
	$(GO) run ./cmd/ramandemo

clean:
	rm -rf bin
