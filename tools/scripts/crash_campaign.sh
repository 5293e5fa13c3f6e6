#!/usr/bin/env bash
# crash_campaign.sh BUILD_DIR [PROGRAM...] - power-cut campaigns on real
# programs: each program's workload under
# `syncshim crashtest`, judged by the program's own integrity checks
# (examples/PROGRAM/), under passthrough (the control), defer with
# max_delay_ms = 100 and defer with max_delay_ms = auto, each with plain
# and adversarial writeback; then one table.
#
# PROGRAMs: sqlite-wal sqlite-journal sqlite-journal1 git postgres
# postgres-checkpoint rocksdb twolog mariadb activemq (default: all).
# twolog is the project's own two-log commit (examples/twolog.c: log A,
# sync, log B, sync, acknowledge; twolog_check); mariadb a throwaway
# MariaDB 10.11 with its binlog and redo log synced per commit under
# sysbench oltp_insert and an acknowledged insert loop
# (examples/mariadb/); activemq Debian's ActiveMQ broker (KahaDB) under 8
# producers of persistent messages, checked by consuming them all back
# (examples/activemq/). sqlite-journal runs one
# sqlite3 process per INSERT (each exit drains what defer owed),
# sqlite-journal1 one connection for the whole run (its journal's and
# database's syncs are owed across commits). postgres cuts at a random moment,
# postgres-checkpoint 0-100 ms after a CHECKPOINT returned (the workload
# kills its own process group then, as the launcher's cut would).
# CAMPAIGN_TRIALS (default 20) trials per row; CAMPAIGN_SEED (default 18);
# CAMPAIGN_POLICIES (default "passthrough defer100 auto"); CAMPAIGN_WRITEBACK
# (default "plain adversarial"); CAMPAIGN_OUT keeps every row's --json
# output there (default: a temporary directory, removed). A lost
# acknowledgement counts against the window if it was acknowledged more
# than CAMPAIGN_WINDOW_MS (default 200: the 100 ms window, the one real
# sync that closes it and scheduling on a busy machine) before the cut.
# Not part of `make test` (`make crash-campaign`).
set -euo pipefail

B=$(cd "${1:?usage: crash_campaign.sh BUILD_DIR [PROGRAM...]}" && pwd)
shift
PROGRAMS=${*:-sqlite-wal sqlite-journal sqlite-journal1 git postgres postgres-checkpoint rocksdb twolog mariadb activemq}
TRIALS=${CAMPAIGN_TRIALS:-20}
SEED=${CAMPAIGN_SEED:-18}
POLICIES=${CAMPAIGN_POLICIES:-passthrough defer100 auto}
WRITEBACKS=${CAMPAIGN_WRITEBACK:-plain adversarial}
WINDOW=${CAMPAIGN_WINDOW_MS:-200}
NOMINAL=${CAMPAIGN_NOMINAL_MS:-100}
EXAMPLES=$(cd "$(dirname "$0")/../../examples" && pwd)
RUN=$B/syncshim
WORK=$(mktemp -d /tmp/syncshim-campaign.XXXXXX)
OUT=${CAMPAIGN_OUT:-$WORK/out}
mkdir -p "$OUT"
KEEP=${CAMPAIGN_KEEP:-${CAMPAIGN_OUT:+$OUT/keep}}
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

printf '[shim]\npolicy = defer\nmax_delay_ms = 100\n' >"$WORK/defer100.ini"
printf '[shim]\npolicy = defer\nmax_delay_ms = auto\n' >"$WORK/auto.ini"
printf '[shim]\npolicy = passthrough\n' >"$WORK/passthrough.ini"

# Each program sets: SETUP (a shell line: the initial state), SCOPE (an
# array of --scope globs), CMD (an array: the workload), CHECK (a shell
# line; the window in ms is appended), CUT, and TIMEOUT.
program_sqlite() { # program_sqlite JOURNAL_MODE [INSERT_MODE (insert.sh's, default JOURNAL_MODE)]
	local how=${2:-$1}
	local d=$WORK/sqlite-$how
	mkdir -p "$d"
	local db=$d/data/db acks=$d/acks
	SETUP="rm -rf '$d/data' '$acks' && mkdir -p '$d/data' && sqlite3 '$db' 'PRAGMA journal_mode=$1; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB NOT NULL)' >/dev/null"
	# -shm stays out: sqlite truncates it on the first open after a crash
	SCOPE=("$db" "$db-wal" "$db-journal")
	CMD=("$EXAMPLES/sqlite/insert.sh" "$db" "$acks" 100000 "$how")
	CHECK="'$EXAMPLES/sqlite/check.sh' '$db' '$acks'"
	CUT=random:300-3000
	TIMEOUT=60
}

program_git() {
	local d=$WORK/git
	mkdir -p "$d"
	SETUP="'$EXAMPLES/git/setup.sh' '$d/repo' '$d/acks'"
	SCOPE=("$d/repo/**")
	CMD=("$EXAMPLES/git/commit.sh" "$d/repo" "$d/acks")
	CHECK="'$EXAMPLES/git/check.sh' '$d/repo' '$d/acks'"
	CUT=random:500-4000
	TIMEOUT=60
}

program_postgres() { # program_postgres random|checkpoint
	local d=$WORK/postgres
	# the server runs as the postgres user: it must reach its directory
	chmod 711 "$WORK"
	[ -d "$d/template" ] || "$EXAMPLES/postgres/setup.sh" template "$d" >/dev/null
	SETUP="'$EXAMPLES/postgres/setup.sh' restore '$d'"
	SCOPE=("$d/pgdata/**")
	CMD=("$EXAMPLES/postgres/pgbench.sh" "$d" "$1")
	CHECK="'$EXAMPLES/postgres/check.sh' '$d'"
	CUT=random:4000-12000 # the server takes seconds to start on a busy machine
	[ "$1" = random ] || CUT=after-ms:100000 # the workload cuts itself
	TIMEOUT=180
}

program_rocksdb() {
	local d=$WORK/rocksdb
	mkdir -p "$d"
	SETUP="rm -rf '$d/db' && mkdir -p '$d/db'"
	SCOPE=("$d/db/**")
	CMD=("$EXAMPLES/rocksdb/fill.sh" "$d/db")
	CHECK="'$EXAMPLES/rocksdb/check.sh' '$d/db'"
	CUT=random:500-4000
	TIMEOUT=60
}

program_twolog() {
	local d=$WORK/twolog
	mkdir -p "$d"
	SETUP="rm -rf '$d/data' && mkdir -p '$d/data'"
	SCOPE=("$d/data/**")
	CMD=("$B/examples/twolog" -d "$d/data" -a "$d/acks" -n 100000000 -k)
	CHECK="'$B/examples/twolog_check' -d '$d/data' -a '$d/acks' -w" # the window in ms follows
	CUT=random:300-3000
	TIMEOUT=60
}

program_mariadb() {
	local d=$WORK/mariadb
	mkdir -p "$d"
	[ -d "$d/template" ] || "$EXAMPLES/mariadb/setup.sh" template "$d" >/dev/null
	SETUP="'$EXAMPLES/mariadb/setup.sh' restore '$d'"
	SCOPE=("$d/data/**")
	CMD=("$EXAMPLES/mariadb/insert.sh" "$d" "$d/acks")
	CHECK="'$EXAMPLES/mariadb/check.sh' '$d' '$d/acks'"
	CUT=random:3000-10000 # the server takes a few seconds to start under crash-test mode
	TIMEOUT=180
}

program_activemq() {
	local d=$WORK/activemq port
	mkdir -p "$d"
	port=$((20000 + RANDOM % 10000))
	"$EXAMPLES/activemq/broker.sh" client "$d/classes" >/dev/null # compiled once, outside the trials
	SETUP="rm -rf '$d/data' && '$EXAMPLES/activemq/broker.sh' conf '$d' $port"
	SCOPE=("$d/data/**") # the broker's data directory: KahaDB is in it; the undo store goes beside it
	CMD=("$EXAMPLES/activemq/produce.sh" "$d" "$port" "$d/acks")
	CHECK="'$EXAMPLES/activemq/check.sh' '$d' $port '$d/acks'"
	CUT=random:3000-12000 # the producers start once the broker accepts, seconds after KahaDB's first file
	TIMEOUT=180
}

setup_program() {
	case $1 in
	sqlite-wal) program_sqlite wal ;;
	sqlite-journal) program_sqlite delete ;;
	sqlite-journal1) program_sqlite delete delete1 ;;
	git) program_git ;;
	postgres) program_postgres random ;;
	postgres-checkpoint) program_postgres checkpoint ;;
	rocksdb) program_rocksdb ;;
	twolog) program_twolog ;;
	mariadb) program_mariadb ;;
	activemq) program_activemq ;;
	*) echo "crash_campaign.sh: unknown program $1" >&2; exit 2 ;;
	esac
}

# count PATTERN FILE: occurrences in a row's JSON (each trial's check
# output holds one result line)
count() { { grep -oE "$1" "$2" || true; } | wc -l; }
total() { sed -n "s/.*\"total\":{.*\"$1\":\([0-9.]*\).*/\1/p" "$2"; }

# older MS FILE: trials whose oldest lost acknowledgement is older than MS
older() { { grep -oE 'lost_oldest_ms=[0-9.]+' "$2" || true; } | awk -F= -v ms="$1" '$2 > ms { n++ } END { print n + 0 }'; }

echo "| program | policy | writeback | trials | integrity failures | lost beyond the window | lost older than $NOMINAL ms | trials with any loss | unusable | oldest lost ack, ms |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for prog in $PROGRAMS; do
	setup_program "$prog"
	scope_args=()
	for g in "${SCOPE[@]}"; do scope_args+=(--scope "$g"); done
	for pol in $POLICIES; do
		for wb in $WRITEBACKS; do
			json=$OUT/$prog.$pol.$wb.json
			keep_args=()
			[ -z "$KEEP" ] || keep_args=(--keep "$KEEP/$prog.$pol.$wb")
			"$RUN" crashtest --json -n "$TRIALS" -c "$WORK/$pol.ini" --cut "$CUT" "${scope_args[@]}" \
				--setup "$SETUP" --writeback "$wb" --seed "$SEED" --timeout "$TIMEOUT" "${keep_args[@]}" \
				--check "$CHECK $WINDOW" -- "${CMD[@]}" >"$json" 2>"$OUT/$prog.$pol.$wb.err" || true
			if ! grep -q '"total":' "$json"; then
				echo "| $prog | $pol | $wb | crashtest failed: $(tail -n 1 "$OUT/$prog.$pol.$wb.err") | | | | | | |"
				continue
			fi
			oldest=$(grep -oE 'lost_oldest_ms=[0-9.]+' "$json" | cut -d= -f2 | sort -g | tail -n 1 || true)
			echo "| $prog | ${pol/defer100/defer 100 ms} | $wb | $(total trials "$json") | $(count 'result: integrity=failed' "$json") |" \
				"$(count 'lost_beyond_window=[1-9][0-9]*' "$json") | $(older "$NOMINAL" "$json") | $(count ' lost=[1-9][0-9]*' "$json") |" \
				"$(total unusable "$json") | ${oldest:-0} |"
		done
	done
done
echo
echo "$TRIALS trials per row, seed $SEED, window $WINDOW ms${KEEP:+, trials that did not pass kept in $KEEP}; $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?')."
