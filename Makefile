# Sluice's developer commands. `make test` is the one full check CI runs.

SWAG := go tool swag init --quiet --dir ./server,./engine --generalInfo doc.go --overridesFile .swaggo --requiredByDefault --outputTypes go,json,yaml --packageName docs
SWAG_FILES := docs.go swagger.json swagger.yaml

# GORACE: a program built with the race detector sleeps a second before it
# exits (atexit_sleep_ms, 1000 by default), for the reports of goroutines
# still running then. Every test binary of make test's race runs is one, and
# so is every sluice process that cmd/sluice's tests start from theirs:
# about a minute of sleep in all (36 test binaries; cmd/sluice's package
# went from 107 s to 83 with it). A race found while a test runs still
# fails it (the testing package counts the reports after each test); only a
# race in a goroutine still running as the process exits may go unreported.
# Options of your own in GORACE come after, and win.
export GORACE := atexit_sleep_ms=0 $(GORACE)

.PHONY: run test tools clients static bench-once chromium postgres redis promtool alerts replicas fmt-check vet docs check-docs bench bench-metrics

# run starts sluice from the sources; ARGS are its flags, as in
# make run ARGS="--demo --addr 127.0.0.1:8080".
run:
	go run ./cmd/sluice $(ARGS)

# SIZE_TESTS runs the tests of size, which skip themselves under the race
# detector.
SIZE_TESTS := CGO_ENABLED=1 go test -vet=off -count=1 -run '^TestRulesApplyAHundredThousandRules$$' ./cmd/sluice/

# test runs every test under the race detector and, in the same binaries (no
# second build), every benchmark once (-benchtime 1x), so that a broken
# benchmark fails here instead of rotting unseen; bench-once does the same
# for the nested modules. The store's, the server's and the rule domain's
# tests then run once more on a throwaway PostgreSQL server
# (SLUICE_TEST_DB=postgres), without the race detector, which the first run
# has applied to the same code. The tests of size that skip themselves under
# the race detector (cmd/sluice's 100,000-rule apply) run beside that pass,
# without it, on SQLite: the pass spends its last minute and more on the
# server's package alone, which leaves room (the two took 250 s beside each
# other where they took 270 s one after the other, on a loaded machine).
# Their output follows the pass's, and either failing fails the target. A
# package may take longer than go test's default timeout of 10 minutes on a
# busy 2-core machine (the console's end-to-end tests under the race
# detector take about 4 on an idle one), hence -timeout 30m. With -bench,
# go test runs the binaries of one invocation one after another; running
# the end-to-end tests in an invocation of their own beside the rest was
# tried and gained nothing measurable (896 and 960 s against 916 and 927):
# they and Chromium take about a core of their own, and under that
# contention grpcmw's TestStreams failed once (its client interceptor may
# end a stream's entry on the stream's context, canceled, before RecvMsg
# reports the stream's status). No go test
# here vets: vet (and, for the nested modules, the line that tests them)
# has run every analyzer on the same packages already, and go test's own
# vet, a subset of them, costs about 75 s of CPU on this module. The race
# detector's build tag only swaps a constant (raceDetector) in the tests.
test: tools fmt-check vet static check-docs clients alerts bench-once chromium postgres redis
	CGO_ENABLED=1 go test -vet=off -race -count=1 -timeout 30m -bench . -benchtime 1x ./...
	@echo "$(SIZE_TESTS) (beside the next one)"
	@out=$$(mktemp) && trap 'rm -f "$$out"' EXIT && \
	{ $(SIZE_TESTS) >"$$out" 2>&1 & } && size=$$! && \
	echo "SLUICE_TEST_DB=postgres CGO_ENABLED=1 go test -vet=off -count=1 ./store/ ./server/ ./server/rules/" && \
	SLUICE_TEST_DB=postgres CGO_ENABLED=1 go test -vet=off -count=1 ./store/ ./server/ ./server/rules/; pg=$$?; \
	wait $$size; sized=$$?; cat "$$out"; [ $$pg -eq 0 ] && [ $$sized -eq 0 ]

# alerts checks the shipped Prometheus alert rules and runs their unit
# tests (deploy/prometheus) with promtool, from Debian's prometheus package.
alerts: promtool
	promtool check rules deploy/prometheus/alerts.yml
	cd deploy/prometheus && promtool test rules alerts_test.yml

promtool:
	@command -v promtool >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus)

# tools installs, when missing, the OpenAPI validators that the server's
# tests run on the served spec (TestServedSpecPassesValidators) and the
# converter and generators that make clients (see clients), pinned, into
# .tools/ (ignored by git). A change of version reinstalls them.
SWAGGER_CLI_VERSION := 4.0.4
REDOCLY_CLI_VERSION := 2.77.0
SWAGGER2OPENAPI_VERSION := 7.0.8
OPENAPI_TYPESCRIPT_VERSION := 7.13.0
TYPESCRIPT_VERSION := 5.9.3
TOOLS_STAMP := .tools/installed-swagger-cli-$(SWAGGER_CLI_VERSION)-redocly-$(REDOCLY_CLI_VERSION)-swagger2openapi-$(SWAGGER2OPENAPI_VERSION)-openapi-typescript-$(OPENAPI_TYPESCRIPT_VERSION)-typescript-$(TYPESCRIPT_VERSION)

tools: $(TOOLS_STAMP)

$(TOOLS_STAMP):
	rm -rf .tools
	npm install --prefix .tools --no-audit --no-fund --save-exact \
		@apidevtools/swagger-cli@$(SWAGGER_CLI_VERSION) @redocly/cli@$(REDOCLY_CLI_VERSION) \
		swagger2openapi@$(SWAGGER2OPENAPI_VERSION) openapi-typescript@$(OPENAPI_TYPESCRIPT_VERSION) \
		typescript@$(TYPESCRIPT_VERSION)
	touch $@

# clients consumes docs/swagger.json as the API's users do, with the
# pinned tools of .tools/ and clients/go.mod's oapi-codegen: converted to
# OpenAPI 3 (swagger2openapi), it must yield TypeScript types
# (openapi-typescript) that clients/plan.ts type-checks against (tsc) and a
# Go client that clients/'s tests drive a real server through. What it
# generates, in clients/gen/, is build output, ignored by git: a change the
# spec needs is made in the annotations (or .swaggo), never there.
CLIENTS_GEN := clients/gen
clients: tools
	rm -rf $(CLIENTS_GEN)
	mkdir -p $(CLIENTS_GEN)/sluiceapi
	.tools/node_modules/.bin/swagger2openapi --outfile $(CLIENTS_GEN)/openapi.json docs/swagger.json
	.tools/node_modules/.bin/openapi-typescript $(CLIENTS_GEN)/openapi.json --output $(CLIENTS_GEN)/sluice.d.ts
	.tools/node_modules/.bin/tsc --project clients
	cd clients && go tool oapi-codegen -config oapi-codegen.yaml gen/openapi.json
	cd clients && go vet ./... && CGO_ENABLED=1 go test -vet=off -race -count=1 ./...

# bench-once vets engine/benchmarks, a module of its own that ./... does not
# reach, and runs each of its benchmarks once. It runs without the race
# detector: it drives sentinel-golang, whose races are not ours to fail on.
# It also vets and tests the other nested modules (NESTED_MODULES), with the
# race detector.
NESTED_MODULES := engine/middleware/chitest engine/middleware/ginmw engine/middleware/echomw bridge/sentinelgo
bench-once:
	cd engine/benchmarks && go vet ./... && go test -vet=off -count=1 -run '^$$' -bench . -benchtime 1x ./...
	for m in $(NESTED_MODULES); do (cd $$m && go vet ./... && CGO_ENABLED=1 go test -vet=off -race -count=1 -timeout 30m -bench . -benchtime 1x ./...) || exit 1; done

# static vets every package and builds the binary without cgo, as the
# docs/ci.md's CI workflow builds the CLI: a cgo-only call outside a cgo file
# (store/sqlite_cgo.go) fails here, not in a user's pipeline.
static:
	CGO_ENABLED=0 go vet ./...
	CGO_ENABLED=0 go build -o /dev/null ./cmd/sluice

# chromium installs the headless browser that the console's end-to-end tests
# (e2e/) drive, Debian's package, when it is missing.
chromium:
	@command -v chromium >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

# postgres installs Debian's PostgreSQL server, when it is missing: the
# tests start throwaway clusters of their own with it (store/pgtest), on
# loopback, as the postgres user when run as root.
postgres:
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql)

# redis installs Debian's Redis server, when it is missing: the cluster
# count's tests start throwaway servers of their own with it
# (server/cluster/redistest), on free loopback ports; the package's own
# service, on 6379, plays no part.
redis:
	@command -v redis-server >/dev/null || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server)

# replicas starts PostgreSQL, Redis and three sluice replicas on loopback
# (127.0.0.1:8081-8083) to try scale-out with, until Ctrl-C, which stops them
# and removes their temporary directory (scripts/replicas.sh).
replicas:
	scripts/replicas.sh

fmt-check:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files are not formatted (run gofmt -w on them):" >&2; \
		echo "$$unformatted" >&2; \
		exit 1; \
	fi

vet:
	go vet ./...

# TABLEGEN_FILES are written from the rule kinds' field tables (engine.Kinds).
TABLEGEN_FILES := server/rules/fields_gen.go docs/rules.md

# docs regenerates what the rule kinds' field tables make (the API's rule
# fields and the rules reference), then the OpenAPI document in docs/ from
# the swag annotations.
docs:
	go run ./internal/tablegen
	$(SWAG) --output ./docs

# check-docs fails when the files the field tables or the annotations
# generate differ from those committed.
check-docs:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	go run ./internal/tablegen -root "$$tmp" && \
	for f in $(TABLEGEN_FILES); do \
		if ! diff -u "$$f" "$$tmp/$$f"; then \
			echo "$$f is out of date with the rule kinds' field tables: run 'make docs' and commit the result" >&2; \
			exit 1; \
		fi; \
	done && \
	$(SWAG) --output "$$tmp" && \
	for f in $(SWAG_FILES); do \
		if ! diff -u "docs/$$f" "$$tmp/$$f"; then \
			echo "docs/$$f is out of date with the swag annotations: run 'make docs' and commit the result" >&2; \
			exit 1; \
		fi; \
	done

bench:
	go test -run '^$$' -bench . -benchmem ./engine/...

# bench-metrics seeds the metric data set once (1,000 resources x 7 days,
# about 10 M minute rows; a few minutes) at BENCH_DB and runs the metric
# benchmarks over HTTP against it; BENCH_METRICS picks some of them
# (make bench-metrics BENCH_METRICS=MetricsTop10Block1h). BENCH_DB may be a
# PostgreSQL URL, of a database seeded once with
# go run ./cmd/sluice-seed --db URL --resources 1000 --days 7.
BENCH_DB ?= /tmp/sluice-bench.db
BENCH_METRICS ?= Metrics
bench-metrics:
	case '$(BENCH_DB)' in postgres*) ;; *) test -f '$(BENCH_DB)' || go run ./cmd/sluice-seed --db '$(BENCH_DB)' --resources 1000 --days 7 ;; esac
	SLUICE_BENCH_DB='$(BENCH_DB)' go test -run '^$$' -bench '$(BENCH_METRICS)' -benchtime 200x ./server
