#!/bin/bash
# rls.sh: the rate limit service's numbers in one sitting, on this machine's
# loopback: ShouldRateLimit beside the HTTP check API (sluice-bench rls), the
# same against envoyproxy/ratelimit on a local Redis, and both under paced
# overload (sluice-bench rls-accuracy). Needs redis-server (make redis) and
# envoyproxy/ratelimit built from its Go module:
#   git clone https://github.com/envoyproxy/ratelimit && (cd ratelimit && go build -o ratelimit ./src/service_cmd)
#   RATELIMIT_BIN=$PWD/ratelimit/ratelimit cmd/sluice-bench/rls.sh
# Without RATELIMIT_BIN only Sluice is measured. COUNT and DUR set the runs
# (default 5 of 5s). Run from anywhere; prints the raw outputs.
set -eu
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
mkdir -p "$work/runtime/config"
token=slc_bench_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; redis-cli -p 6399 shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

go build -o "$work/sluice" ./cmd/sluice
go build -o "$work/sluice-bench" ./cmd/sluice-bench
redis-server --port 6399 --save '' --appendonly no --daemonize yes --logfile "$work/redis.log"
"$work/sluice" --addr 127.0.0.1:18180 --grpc-addr 127.0.0.1:18181 --db "$work/sluice.db" --bootstrap-token "$token" 2>"$work/sluice.log" &
pids+=($!)
cat >"$work/runtime/config/bench.yaml" <<'YAML'
domain: bench
descriptors:
  - key: route
    value: checkout
    rate_limit: { unit: second, requests_per_unit: 1000000000 }
  - key: route
    value: paced
    rate_limit: { unit: second, requests_per_unit: 100 }
YAML
if [ -n "${RATELIMIT_BIN:-}" ]; then
	RUNTIME_ROOT="$work/runtime" RUNTIME_SUBDIRECTORY=. RUNTIME_APPDIRECTORY=config RUNTIME_WATCH_ROOT=false USE_STATSD=false \
		REDIS_SOCKET_TYPE=tcp REDIS_URL=127.0.0.1:6399 GRPC_PORT=18281 PORT=18280 DEBUG_PORT=18282 LOG_LEVEL=warn \
		"$RATELIMIT_BIN" >"$work/ratelimit.log" 2>&1 &
	pids+=($!)
fi
until curl -sf -o /dev/null http://127.0.0.1:18180/api/v1/health; do sleep 0.2; done
# The same descriptors as Sluice rules (server/descriptor names them).
for rule in '{"name":"bench-checkout","kind":"flow","resource":"bench:route=checkout","threshold":1000000000}' \
	'{"name":"bench-paced","kind":"flow","resource":"bench:route=paced","threshold":100}'; do
	curl -sf -o /dev/null -X POST http://127.0.0.1:18180/api/v1/rules -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d "$rule"
done
sleep 1

echo "== Sluice: ShouldRateLimit beside the HTTP check API"
"$work/sluice-bench" rls -grpc 127.0.0.1:18181 -http http://127.0.0.1:18180 -token "$token" -domain bench \
	-descriptor route=checkout -resource bench:route=checkout -concurrency 64 -duration "${DUR:-5s}" -count "${COUNT:-5}"
if [ -n "${RATELIMIT_BIN:-}" ]; then
	echo "== envoyproxy/ratelimit (Redis)"
	"$work/sluice-bench" rls -grpc 127.0.0.1:18281 -http "" -domain bench -descriptor route=checkout \
		-concurrency 64 -duration "${DUR:-5s}" -count "${COUNT:-5}"
fi
echo "== exactness: Sluice"
"$work/sluice-bench" rls-accuracy -grpc 127.0.0.1:18181 -token "$token" -domain bench -descriptor route=paced -rate 300 -duration 10s
if [ -n "${RATELIMIT_BIN:-}" ]; then
	echo "== exactness: envoyproxy/ratelimit"
	"$work/sluice-bench" rls-accuracy -grpc 127.0.0.1:18281 -domain bench -descriptor route=paced -rate 300 -duration 10s
fi
