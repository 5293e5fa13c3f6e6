#!/usr/bin/env bash
# crashtest.sh - PostgreSQL under pgbench, cut again and again by `syncshim
# crashtest` in the server form, then recovered and checked with amcheck.
#
#   examples/postgres/crashtest.sh [-n TRIALS] [-w DIR] [-k DIR] [POLICY | INI]
#
# Needs root (the server runs as postgres, through runuser, which keeps
# LD_PRELOAD: the shim is in every backend). Once: a cluster in
# DIR/template (setup.sh template: initdb, pgbench -i, amcheck). Per
# trial: DIR/data afresh from it, postgres under the policy (default
# defer) or the ini, ready once psql's SELECT 1 is answered (the pgsql:
# probe), pgbench tpcb-like with 4 clients (without the shim) until the
# cut, a random moment 500-3000 ms into the load; every file of the cluster
# rolled back to what a real sync had made durable; then check.sh: the
# server started on those files without the shim (crash recovery must
# succeed), the balances' invariant, bt_index_check and verify_heapam.
# crashtest gives each trial's undo store to the owner of DIR/data (the
# postgres user), so the server records into it. -w DIR works in DIR
# (made if missing, removed at the end): the same DIR as ab.sh -w DIR, the
# same paths, so an ini that `ab.sh -w DIR -P INI` proposed applies; -k
# DIR keeps the trials that did not pass. syncshim comes from $SYNCSHIM_BUILD
# (default: this tree's build/), else from PATH.
set -euo pipefail

trials=10 work="" keep=()
while getopts "n:w:k:" opt; do
	case $opt in
	n) trials=$OPTARG ;;
	w) work=$OPTARG ;;
	k) keep=(--keep "$OPTARG") ;;
	*) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
side=${1:-defer}
how=(-p "$side")
[ -f "$side" ] && how=(-c "$(realpath "$side")")
here=$(cd "$(dirname "$0")" && pwd)
export PGDATA_DIR=data # ab.sh's layout: a profile's rules (ab.sh -w DIR -P INI) match here with -w DIR
. "$here/common.sh"
syncshim=${SYNCSHIM_BUILD:-$here/../../build}/syncshim
[ -x "$syncshim" ] || syncshim=syncshim
[ "$(id -u)" = 0 ] || { echo "crashtest.sh: needs root (postgres runs as the postgres user)" >&2; exit 2; }
if [ -n "$work" ]; then
	mkdir -p "$work"
	d=$(cd "$work" && pwd)
else
	d=$(mktemp -d "${TMPDIR:-/tmp}/syncshim-pg.XXXXXX")
fi
chmod 755 "$d"
trap 'pg_stop "$d"; rm -rf "$d"' EXIT
"$here/setup.sh" template "$d"

"$syncshim" crashtest -n "$trials" "${how[@]}" "${keep[@]}" --cut random:500-3000 --scope "$d/$PGDATA_DIR/**" \
	--timeout 120 --setup "'$here/setup.sh' restore '$d'" \
	--ready "pgsql:-h '$d' -p $PGPORT -U postgres postgres" \
	--load "runuser -u postgres -- '$PGBIN/pgbench' -h '$d' -p $PGPORT -U postgres -n -b tpcb-like -c 4 -j 2 -T 600 postgres" \
	--check "'$here/check.sh' '$d'" -- \
	runuser -u postgres -- "$PGBIN/postgres" -D "$d/$PGDATA_DIR" -k "$d" -p "$PGPORT" -c listen_addresses= \
	"${PG_TRIAL_SETTINGS[@]}"
