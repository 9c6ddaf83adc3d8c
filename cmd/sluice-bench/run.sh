#!/bin/sh
# run.sh: the check API's numbers in one go, on this machine's loopback:
# the hello-world ceiling, single checks, batches of 100 (wrk -t2 -c64 -d15s
# each) and accuracy over HTTP. Needs wrk (apt-get install wrk). Run from
# anywhere; prints the raw outputs.
set -eu
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'kill $sluice_pid $hello_pid 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/sluice" ./cmd/sluice
go build -o "$work/sluice-bench" ./cmd/sluice-bench
SLUICE_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export SLUICE_TOKEN
"$work/sluice" --addr 127.0.0.1:8080 --db "$work/bench.db" --bootstrap-token "$SLUICE_TOKEN" 2>"$work/sluice.log" &
sluice_pid=$!
"$work/sluice-bench" hello -addr 127.0.0.1:8081 >"$work/hello.log" 2>&1 &
hello_pid=$!
for url in http://127.0.0.1:8080/api/v1/health http://127.0.0.1:8081/; do
	until curl -s -o /dev/null "$url"; do sleep 0.2; done
done

wrkdir=cmd/sluice-bench/wrk
echo "== $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== hello world (the ceiling)"
wrk -t2 -c64 -d15s --latency -s $wrkdir/hello.lua http://127.0.0.1:8081/
echo "== POST /api/v1/check"
wrk -t2 -c64 -d15s --latency -s $wrkdir/check.lua http://127.0.0.1:8080/api/v1/check
echo "== POST /api/v1/check/batch, 100 checks a request"
wrk -t2 -c64 -d15s --latency -s $wrkdir/batch.lua http://127.0.0.1:8080/api/v1/check/batch
echo "== accuracy: a 100 QPS reject rule hammered for 10 s"
"$work/sluice-bench" accuracy -server http://127.0.0.1:8080 -threshold 100 -duration 10s
