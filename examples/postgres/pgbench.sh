#!/usr/bin/env bash
# pgbench.sh DIR [checkpoint] - the workload of a PostgreSQL power-cut
# trial: the postmaster (and so every backend: a shim in LD_PRELOAD comes
# along) on DIR/pgdata, then pgbench tpcb-like (each transaction adds the
# same delta to one account, its teller and its branch: the three sums of
# balances stay equal) with 4 clients until the cut.
# With "checkpoint": after 1-3 s a CHECKPOINT, and 0-100 ms after it
# returned the whole process group is killed (SIGKILL, the same cut
# syncshim crashtest makes), the moment issue 18 found PostgreSQL unable
# to start under defer.
set -euo pipefail
. "$(dirname "$0")/common.sh"
d=${1:?usage: pgbench.sh DIR [checkpoint]}
mode=${2:-random}
# crash-test mode: the undo store must be open to the server's user
if [ -n "${SYNCSHIM_CRASH_DIR:-}" ]; then
	chmod 711 "$(dirname "$SYNCSHIM_CRASH_DIR")"
	chmod 777 "$SYNCSHIM_CRASH_DIR"
	chmod 666 "$SYNCSHIM_CRASH_DIR/undo.log"
fi
pg_start "$d" "${PG_TRIAL_SETTINGS[@]}" || { tail -n 20 "$d/server.log" >&2; exit 1; }
as_pg "$PGBIN/pgbench" -h "$d" -U postgres -n -b tpcb-like -c 4 -j 2 -T 600 postgres >"$d/pgbench.log" 2>&1 &
if [ "$mode" = checkpoint ]; then
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.3f", 1 + 2 * r / 32768 }')"
	psql_q "$d" CHECKPOINT
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.3f", 0.1 * r / 32768 }')"
	kill -KILL 0
fi
wait
