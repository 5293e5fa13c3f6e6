#!/usr/bin/env bash
# ab.sh - PostgreSQL 15 under pgbench, A/B under syncshim.
#
#   examples/postgres/ab.sh [-n ROUNDS] [-t SECONDS] [-c CLIENTS] [-o DIR] [-w DIR] [A [B]]
#   examples/postgres/ab.sh -P INI [-t SECONDS] [-c CLIENTS] [-o DIR] [-w DIR]
#
# One `syncshim ab` command: per round, A B A B, a fresh cluster (a copy
# of one initdb + pgbench -i made first, without the shim), postgres under
# the side's policy (default A passthrough, B defer; a policy name or an
# ini file), ready once psql's SELECT 1 is answered (the pgsql: probe),
# pgbench's tps (without the shim) as the figure, then SIGTERM. It prints
# each side's median and spread, the B/A ratio and the server's
# sync-latency table (synclat compare). The server listens on a Unix
# socket in a temp dir only (listen_addresses = ''). As root, initdb and
# postgres run as $PG_USER (default postgres) through runuser, and the
# temp dir is theirs. The temp dir is removed at the end unless -o DIR keeps
# the outputs. syncshim comes from $SYNCSHIM_BUILD (default: this tree's
# build/), else from PATH.
#
# -P INI profiles instead: the same server and load once under `syncshim
# profile`, which writes the rules it proposes to INI (outside the work
# dir). -w DIR works in DIR (made if missing, removed at the end) instead
# of a new temp dir, so that a profile and a later A/B with its INI see the
# same paths:
#   examples/postgres/ab.sh -w /tmp/pg-ab -P pg.ini
#   examples/postgres/ab.sh -w /tmp/pg-ab passthrough pg.ini
set -euo pipefail

rounds=3 secs=10 clients=4 out=""
here=$(cd "$(dirname "$0")" && pwd)
ab_name=postgres ab_opt=t ab_var=secs
. "$here/../ab_common.sh"
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
mkdir -p "$run"
as=()
if [ "$(id -u)" = 0 ]; then
	user=${PG_USER:-postgres}
	chmod 755 "$tmp"
	chown "$user" "$tmp" "$run" # the server writes its latency logs there
	as=(runuser -u "$user" --)
fi
data=$tmp/data port=5432
run_as=$(printf '%q ' "${as[@]}")
# One initdb and pgbench -i, without the shim, copied afresh before every
# round (they are the slow part).
"${as[@]}" "$bin/initdb" -D "$tmp/template" -A trust -U postgres --no-sync >/dev/null
"${as[@]}" "$bin/pg_ctl" -D "$tmp/template" -w -s -l "$tmp/template.log" \
	-o "-k '$tmp' -p $port -c listen_addresses=" start
"${as[@]}" "$bin/pgbench" -h "$tmp" -p $port -U postgres -i -q postgres > "$tmp/init.log" 2>&1 ||
	{ cat "$tmp/init.log" >&2; "${as[@]}" "$bin/pg_ctl" -D "$tmp/template" -w -s -m fast stop; exit 1; }
"${as[@]}" "$bin/pg_ctl" -D "$tmp/template" -w -s -m fast stop

service=(--setup "rm -rf '$data' && $run_as cp -a '$tmp/template' '$data'"
	--ready "pgsql:-h '$tmp' -p $port -U postgres postgres"
	--load "$run_as '$bin/pgbench' -h '$tmp' -p $port -U postgres -c $clients -T $secs postgres")
server=("${as[@]}" "$bin/postgres" -D "$data" -k "$tmp" -p $port -c listen_addresses=
	-c shared_buffers=32MB -c max_wal_size=256MB)
if [ -n "$profile" ]; then
	# The logs go to the run dir, which the server's user can write.
	"$syncshim" profile -o "$profile" -d "$run" "${service[@]}" -- "${server[@]}"
	exit
fi
"$syncshim" ab -n "$rounds" -o "$run" "$a" "$b" "${service[@]}" --metric 'tps = ([0-9.]+)' -- "${server[@]}"
