#!/bin/sh
# seed-rankings.sh: the data set of the PostgreSQL rankings' figures in
# docs/performance.md ("PostgreSQL rankings"). Fills the empty PostgreSQL
# database at URL with sluice-seed's 1,000 resources x 2 days of minutes
# (2.88 M minute rows, the same every run), or --days N days (7: the
# 10.08 M minute rows of issue #33's figures), and their rollups, ending at
# 2026-11-28T12:30Z, mid-hour, then VACUUMs it: sluice-seed writes by COPY
# and analyzes, but until a vacuum marks the pages all-visible, a ranking
# reads the heap behind its index (the 1-hour one 6,005 pages against
# 297), and when autovacuum gets there is not up to the benchmark.
# Takes about a minute a day of minutes. Needs go and psql (make
# postgres).
#
# Usage: scripts/seed-rankings.sh [--days N] postgres://user:password@127.0.0.1:5432/sluice_rankings
# then:  SLUICE_BENCH_DB=URL go test -run '^$' -bench 'MetricsTop10Block(1|24)h' -benchtime 200x ./server/
set -eu
cd "$(dirname "$0")/.."

days=2
if [ $# -eq 3 ] && [ "$1" = --days ]; then
	days=$2
	shift 2
fi
if [ $# -ne 1 ]; then
	echo "usage: scripts/seed-rankings.sh [--days N] postgres://… (an empty database, created with createdb)" >&2
	exit 2
fi
url=$1

psql=$(command -v psql || ls -d /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -t/ -k5 -n | tail -n 1)
if [ -z "$psql" ] || [ ! -x "$psql" ]; then
	echo "seed-rankings.sh: psql is not installed: run make postgres" >&2
	exit 1
fi

go run ./cmd/sluice-seed --db "$url" --resources 1000 --days "$days" --end 2026-11-28T12:30:00Z
"$psql" -X -q "$url" -c 'VACUUM (ANALYZE)'
