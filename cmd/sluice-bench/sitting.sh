#!/bin/bash
# sitting.sh: issue #33's figures in one sitting, the commit BASE (A)
# against HEAD (B), interleaved: each round runs A then B, the next B then
# A, so that a machine's drift falls on both sides alike.
#
#   cmd/sluice-bench/sitting.sh [-n ROUNDS] [-fleet] [BASE [HEAD]]
#
# BASE defaults to c34ec6a (issue #33's measurements), HEAD to HEAD; both
# are built from detached worktrees in a temporary directory, so the
# checkout's own changes are not measured. ROUNDS defaults to 5. Each round
# measures:
#
#   - the engine (engine/benchmarks): Entry+Exit by name and by handle on
#     one goroutine; RunParallel by handle and by name, and the hotspot's,
#     on 1 and 2 cores (-cpu 1,2); the heap per resource; sentinel-golang's
#     Entry+Exit and heap as the anchor (from HEAD's binary only);
#   - a report's decoding (server's BenchmarkDecodeReport, when the commit
#     has it);
#   - the HTTP check and its batch of 100: wrk -t2 -c64 -d8s against
#     `sluice-bench hello` (the ceiling, once a round), then against a
#     sluice of A and one of B (needs wrk: apt-get install wrk);
#   - with SLUICE_BENCH_DB set to a PostgreSQL URL seeded by
#     scripts/seed-rankings.sh, the top-10 rankings over 1 h,
#     24 h and 7 d; A reads SLUICE_BENCH_DB_A if set, a database seeded at
#     A's schema, as a server refuses a schema newer than its migrations;
#   - with SLUICE_BENCH_SQLITE set to a SQLite file of the same data set
#     (go run ./cmd/sluice-seed --db FILE --resources 1000 --days 7
#     --end 2026-11-28T12:30:00Z), the same rankings on SQLite; A reads
#     SLUICE_BENCH_SQLITE_A if set, else only B runs them;
#   - with -fleet, 2,000 instances × 50 resources reporting each second
#     for 65 s to a fresh sluice of each side on SQLite (sluice-bench
#     reporters), report latency and the server's CPU; with
#     SLUICE_BENCH_FLEET_PG set to a PostgreSQL server's URL without a
#     database (postgres://user:password@127.0.0.1:5432, a user who may
#     create databases), the same again to a sluice on a database created
#     afresh on it for each run (needs psql).
#
# It prints the comparison with benchstat (medians and their spread, and
# whether A and B differ) and keeps every raw output under the directory it
# names. Run it on a quiet machine: nothing else building or testing.
set -euo pipefail

rounds=5
fleet=0
while [ $# -gt 0 ]; do
	case "$1" in
	-n) rounds=$2; shift 2 ;;
	-fleet) fleet=1; shift ;;
	-*) echo "usage: $0 [-n ROUNDS] [-fleet] [BASE [HEAD]]" >&2; exit 2 ;;
	*) break ;;
	esac
done
base=${1:-c34ec6a}
head=${2:-HEAD}
command -v wrk >/dev/null || { echo "sitting.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }

repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
work=$(mktemp -d /tmp/sitting.XXXXXX)
out=$work/out
mkdir -p "$out"
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	git -C "$repo" worktree remove --force "$work/A" 2>/dev/null || true
	git -C "$repo" worktree remove --force "$work/B" 2>/dev/null || true
}
trap cleanup EXIT

benchstat() {
	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da "$@"
}

# build SIDE COMMIT: the side's test binaries and programs, in $work/SIDE/bin.
build() {
	local side=$1 commit=$2 dir=$work/$1
	git -C "$repo" worktree add --quiet --detach "$dir" "$commit"
	mkdir -p "$dir/bin"
	(cd "$dir/engine/benchmarks" && go test -c -o "$dir/bin/engine.test" .)
	(cd "$dir" && go test -c -o "$dir/bin/server.test" ./server/ &&
		go build -o "$dir/bin/sluice" ./cmd/sluice &&
		go build -o "$dir/bin/sluice-bench" ./cmd/sluice-bench)
	echo "$side = $(git -C "$dir" rev-parse --short HEAD)" | tee -a "$out/sides"
}
build A "$base"
build B "$head"

SLUICE_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export SLUICE_TOKEN

# serve SIDE PORT [DB]: starts a sluice of SIDE on loopback, on DB or a new
# SQLite file in $work, and waits for it; its process id is in $served.
serve() {
	local side=$1 port=$2 db=${3:-}
	[ -n "$db" ] || db=$(mktemp -u "$work/$side-XXXXXX.db")
	"$work/$side/bin/sluice" --addr "127.0.0.1:$port" --db "$db" --bootstrap-token "$SLUICE_TOKEN" \
		>>"$out/sluice-$side.log" 2>&1 &
	served=$!
	pids+=("$served")
	until curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/health"; do sleep 0.2; done
}

# rps URL SCRIPT: one wrk run's requests per second.
rps() {
	echo "== $1" >>"$out/wrk.log"
	wrk -t2 -c64 -d8s -s "$repo/cmd/sluice-bench/wrk/$2" "$1" | tee -a "$out/wrk.log" | awk '/^Requests\/sec:/ {print $2}'
}

"$work/B/bin/sluice-bench" hello -addr 127.0.0.1:18081 >"$out/hello.log" 2>&1 &
pids+=($!)
until curl -s -o /dev/null -X POST http://127.0.0.1:18081/; do sleep 0.2; done
serve A 18082
serve B 18083
declare -A port=([A]=18082 [B]=18083)

# go test splits a -bench pattern at its slashes, one part a level.
engine_bench='^Benchmark(EntryExitPass|EntryExitPassParallel|HotspotEntryExitPassParallel)$/^engine=sluice'
for round in $(seq 1 "$rounds"); do
	order="A B"
	[ $((round % 2)) -eq 0 ] && order="B A"
	echo "== round $round of $rounds ($order), load $(cut -d' ' -f1-3 /proc/loadavg)"
	hello=$(rps http://127.0.0.1:18081/ hello.lua)
	echo "BenchmarkHTTPHello 1 $hello req/s" >>"$out/http-ceiling.txt"
	for side in $order; do
		bin=$work/$side/bin
		(cd "$work/$side/engine/benchmarks" &&
			"$bin/engine.test" -test.run '^$' -test.bench "$engine_bench" -test.cpu 1,2 -test.benchtime 500ms &&
			"$bin/engine.test" -test.run '^$' -test.bench '^BenchmarkMemoryPerResource$/^engine=sluice$' -test.benchtime 3x) \
			>>"$out/engine-$side.txt"
		(cd "$work/$side/server" &&
			"$bin/server.test" -test.run '^$' -test.bench '^BenchmarkDecodeReport$' -test.benchtime 2000x) >>"$out/decode-$side.txt"
		check=$(rps "http://127.0.0.1:${port[$side]}/api/v1/check" check.lua)
		batch=$(rps "http://127.0.0.1:${port[$side]}/api/v1/check/batch" batch.lua)
		awk -v c="$check" -v b="$batch" -v h="$hello" 'BEGIN {
			printf "BenchmarkHTTPCheck 1 %s req/s %.2f %%-of-hello\n", c, 100 * c / h
			printf "BenchmarkHTTPBatch100 1 %.0f decisions/s\n", 100 * b
		}' >>"$out/http-$side.txt"
		if [ -n "${SLUICE_BENCH_DB:-}" ]; then
			db=$SLUICE_BENCH_DB
			[ "$side" = A ] && db=${SLUICE_BENCH_DB_A:-$db}
			(cd "$work/$side/server" && SLUICE_BENCH_DB=$db \
				"$bin/server.test" -test.run '^$' -test.bench '^BenchmarkMetricsTop10Block(1h|24h|7d)$' -test.benchtime 200x) \
				>>"$out/pg-$side.txt" 2>>"$out/pg-$side.log" || echo "the rankings of $side failed: $out/pg-$side.log" >&2
		fi
		db=${SLUICE_BENCH_SQLITE:-}
		[ "$side" = A ] && db=${SLUICE_BENCH_SQLITE_A:-}
		if [ -n "$db" ]; then
			(cd "$work/$side/server" && SLUICE_BENCH_DB=$db \
				"$bin/server.test" -test.run '^$' -test.bench '^BenchmarkMetricsTop10Block(1h|24h|7d)$' -test.benchtime 200x) \
				>>"$out/sqlite-$side.txt" 2>>"$out/sqlite-$side.log" || echo "the SQLite rankings of $side failed: $out/sqlite-$side.log" >&2
		fi
	done
	(cd "$work/B/engine/benchmarks" &&
		"$work/B/bin/engine.test" -test.run '^$' -test.bench '^Benchmark(EntryExitPass|MemoryPerResource)$/^engine=sentinel$' \
			-test.cpu 1 -test.benchtime 500ms) >>"$out/sentinel.txt"
done

# fleet PART SIDE [DB]: one fleet run against a fresh sluice of SIDE, its
# figures appended to $out/PART-SIDE.txt. A run whose reports failed
# (sluice-bench then exits 1) still counts: its failures are a figure.
fleet() {
	local part=$1 side=$2
	serve "$side" 18090 "${3:-}"
	{ "$work/B/bin/sluice-bench" reporters -server http://127.0.0.1:18090 -instances 2000 -resources 50 \
		-duration 65s -server-pid "$served" || true; } 2>&1 | tee -a "$out/$part-$side.log" |
		awk '/report latency/ {
			for (i = 1; i <= NF; i++) if ($i == "p50" || $i == "p99" || $i == "max") {
				v = $(i + 1); sub(/,$/, "", v); ms = v + 0
				if (v ~ /µs$/) ms /= 1000; else if (v ~ /[0-9]s$/ && v !~ /ms$/) ms *= 1000
				line = line sprintf(" %.2f %s-ms", ms, $i)
			}
			failed = $NF + 0
		}
		/server CPU/ { cpu = $3 + 0 }
		END { printf "BenchmarkFleet2000x50 1%s %d failed-reports %.1f %%-of-a-core\n", line, failed, cpu }' >>"$out/$part-$side.txt"
	kill "$served"
	wait "$served" 2>/dev/null || true
}

# fresh_pg SIDE ROUND: a new database on SLUICE_BENCH_FLEET_PG's server, its URL.
fresh_pg() {
	local name="sitting_fleet_${1,,}_$2"
	psql -X -q "$SLUICE_BENCH_FLEET_PG/postgres" -c "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name" >&2
	echo "$SLUICE_BENCH_FLEET_PG/$name"
}

if [ "$fleet" = 1 ]; then
	for round in $(seq 1 "$rounds"); do
		order="A B"
		[ $((round % 2)) -eq 0 ] && order="B A"
		for side in $order; do
			fleet fleet "$side"
			if [ -n "${SLUICE_BENCH_FLEET_PG:-}" ]; then
				fleet fleetpg "$side" "$(fresh_pg "$side" "$round")"
			fi
		done
	done
fi

cd "$out"
echo "== $(cat sides | tr '\n' ' ')"
for part in engine decode http pg sqlite fleet fleetpg; do
	[ -s "$part-A.txt" ] || [ -s "$part-B.txt" ] || continue
	echo "== $part"
	benchstat -filter '-.unit:(B/op OR allocs/op OR B/s)' A="$part-A.txt" B="$part-B.txt" || true
done
echo "== the ceiling: sluice-bench hello"
benchstat hello=http-ceiling.txt || true
echo "== the anchor: sentinel-golang"
benchstat -filter '.unit:(sec/op OR B/resource)' sentinel=sentinel.txt || true
echo "raw outputs: $out"
trap - EXIT
cleanup
