#!/usr/bin/env bash
# check.sh DIR [WINDOW_MS] - after a power cut: PostgreSQL started on
# DIR/pgdata WITHOUT the shim must recover (crash recovery replays the
# WAL), the tpcb-like invariant must hold (sum of abalance = sum of
# bbalance = sum of tbalance), and amcheck must find nothing: bt_index_check
# on every B-tree index, verify_heapam on every table. WINDOW_MS is
# accepted for crash_campaign.sh and unused: pgbench acknowledges nothing
# the check could count.
set -euo pipefail
unset LD_PRELOAD
. "$(dirname "$0")/common.sh"
d=${1:?usage: check.sh DIR [WINDOW_MS]}
fail() {
	echo "check.sh: $d: $1"
	[ -z "${2:-}" ] || sed 's/^/  /' "$2" | tail -n 15
	echo "result: integrity=failed"
	pg_stop "$d"
	exit 1
}
: >"$d/check.log"
if ! pg_start "$d" >/dev/null 2>&1; then
	fail "the server does not start on the rolled-back files (recovery failed):" "$d/server.log"
fi
sums=$(psql_q "$d" "SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ' ' || (SELECT sum(bbalance) FROM pgbench_branches) || ' ' || (SELECT sum(tbalance) FROM pgbench_tellers)" 2>"$d/check.log") ||
	fail "cannot read the balances:" "$d/check.log"
read -r a b t <<<"$sums"
[ "$a" = "$b" ] && [ "$b" = "$t" ] || fail "the invariant does not hold: accounts $a, branches $b, tellers $t"
bad_index=$(psql_q "$d" "SELECT count(bt_index_check(c.oid, true)) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	JOIN pg_am am ON am.oid = c.relam WHERE am.amname = 'btree' AND c.relpersistence != 't'" 2>"$d/check.log") ||
	fail "amcheck: bt_index_check reports corruption:" "$d/check.log"
bad_heap=$(psql_q "$d" "SELECT count(*) FROM pg_class c, LATERAL verify_heapam(c.oid) WHERE c.relkind IN ('r', 'm', 't')
	AND c.relpersistence != 't'" 2>"$d/check.log") || fail "amcheck: verify_heapam failed:" "$d/check.log"
[ "$bad_heap" = 0 ] || fail "amcheck: verify_heapam found $bad_heap corrupt tuples or pages"
tx=$(psql_q "$d" "SELECT count(*) FROM pgbench_history")
pg_stop "$d"
echo "check.sh: $d: recovered; balances $a = $b = $t; amcheck clean ($bad_index B-tree indexes, every table); $tx transactions in history"
echo "result: integrity=ok transactions=$tx indexes=$bad_index"
