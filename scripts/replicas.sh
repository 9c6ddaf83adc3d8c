#!/bin/sh
# replicas.sh: the local three-replica recipe. Starts, on loopback only, a
# throwaway PostgreSQL cluster and a Redis server in a temporary directory,
# then three sluice replicas on them (127.0.0.1:8081, :8082, :8083; BASE_PORT
# moves them), prints their URLs and the admin login, and waits. Ctrl-C stops
# everything and removes the directory. Needs Debian's postgresql and
# redis-server packages (make postgres redis) and curl; installs nothing.
# Run from anywhere: scripts/replicas.sh, or make replicas.
set -eu
cd "$(dirname "$0")/.."

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n | tail -n 1)
if [ -z "$pgbin" ] || [ ! -x "$pgbin/postgres" ] || ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	echo "replicas.sh: PostgreSQL or Redis is not installed: run make postgres redis" >&2
	exit 1
fi
if ! command -v curl >/dev/null; then
	echo "replicas.sh: curl is not installed (apt-get install curl)" >&2
	exit 1
fi

# as_postgres runs a PostgreSQL command as the postgres user when run as
# root, which PostgreSQL refuses to run as.
as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# listening says whether something listens on the loopback port $1.
listening() {
	[ -n "$(ss -Htln "sport = :$1" 2>/dev/null)" ]
}

# free_port prints a loopback port in 20000-59999 nothing listens on.
free_port() {
	while :; do
		port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
		listening "$port" || break
	done
	echo "$port"
}

base=${BASE_PORT:-8081}
for port in "$base" $((base + 1)) $((base + 2)); do
	if listening "$port"; then
		echo "replicas.sh: port $port is taken; BASE_PORT=9081 $0 moves the replicas" >&2
		exit 1
	fi
done

work=$(mktemp -d)
chmod 0711 "$work"
pids=""
pg_started=""
cleanup() {
	trap - EXIT INT TERM
	echo "stopping the replicas, Redis and PostgreSQL"
	for pid in $pids; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in $pids; do
		wait "$pid" 2>/dev/null || true
	done
	if [ -n "$pg_started" ]; then
		as_postgres "$pgbin/pg_ctl" -D "$work/pg/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building sluice"
go build -o "$work/sluice" ./cmd/sluice

echo "starting PostgreSQL"
mkdir "$work/pg"
if [ "$(id -u)" -eq 0 ]; then
	chown postgres "$work/pg"
fi
as_postgres "$pgbin/initdb" -D "$work/pg/data" -U postgres --auth=trust --no-sync --encoding=UTF8 --locale=C >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log" >&2; exit 1; }
pg_port=$(free_port)
pg_started=yes
as_postgres "$pgbin/pg_ctl" -D "$work/pg/data" -l "$work/pg/postgres.log" -w \
	-o "-h 127.0.0.1 -p $pg_port -k $work/pg" start >/dev/null ||
	{ cat "$work/pg/postgres.log" >&2; exit 1; }
"$pgbin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres sluice
db="postgres://postgres@127.0.0.1:$pg_port/sluice?sslmode=disable"

echo "starting Redis"
mkdir "$work/redis"
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work/redis" --save "" --appendonly no \
	--daemonize no >"$work/redis.log" 2>&1 &
pids="$pids $!"
until redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1; do sleep 0.1; done
redis="redis://127.0.0.1:$redis_port/0"

password=$(od -An -N10 -tx1 /dev/urandom | tr -d ' \n')
token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
# The secrets go in the environment, not on the process list. One replica
# at a time: the first applies the migrations and creates the admin.
for i in 1 2 3; do
	port=$((base + i - 1))
	echo "starting replica $i on 127.0.0.1:$port"
	SLUICE_ADMIN_PASSWORD=$password SLUICE_BOOTSTRAP_TOKEN=$token \
		"$work/sluice" --addr "127.0.0.1:$port" --db "$db" --redis "$redis" >"$work/replica$i.log" 2>&1 &
	pid=$!
	pids="$pids $pid"
	until curl -sf -o /dev/null "http://127.0.0.1:$port/api/v1/health"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "replicas.sh: replica $i exited:" >&2
			cat "$work/replica$i.log" >&2
			exit 1
		fi
		sleep 0.2
	done
done

cat <<EOF

Three sluice replicas on one PostgreSQL and one Redis, loopback only:
  http://127.0.0.1:$base/  http://127.0.0.1:$((base + 1))/  http://127.0.0.1:$((base + 2))/
  console login: admin / $password
  API token:     $token   (export SLUICE_TOKEN=$token)
  PostgreSQL:    $db
  Redis:         $redis
  logs:          $work/replica1.log … replica3.log

A cluster rule written on replica 1, counted across all three:
  curl -H "Authorization: Bearer $token" -d '{"name":"pay","kind":"flow","resource":"pay","threshold":10,"scope":"cluster"}' http://127.0.0.1:$base/api/v1/rules
  curl -H "Authorization: Bearer $token" http://127.0.0.1:$((base + 2))/api/v1/cluster

Ctrl-C stops everything and removes $work.
EOF
wait
