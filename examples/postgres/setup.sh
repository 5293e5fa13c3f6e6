#!/usr/bin/env bash
# setup.sh template DIR - a cluster in DIR/template (initdb with 1 MiB WAL
# segments, pgbench -i scale 1: the tpcb-like tables, every balance 0),
# cleanly shut down.
# setup.sh restore DIR - DIR/pgdata afresh from the template (each trial's
# initial state). DIR (and the directories above it) must be reachable by
# the postgres user.
set -euo pipefail
. "$(dirname "$0")/common.sh"
what=${1:?usage: setup.sh template|restore DIR}
d=${2:?usage: setup.sh template|restore DIR}
case $what in
template)
	mkdir -p "$d"
	chown postgres: "$d"
	pg_stop "$d"
	rm -rf "$d/template" "$d/$PGDATA_DIR"
	as_pg "$PGBIN/initdb" -D "$d/$PGDATA_DIR" -A trust -U postgres --wal-segsize=1 --no-sync >"$d/initdb.log" 2>&1
	pg_start "$d" || { tail -n 20 "$d/server.log" >&2; exit 1; }
	as_pg "$PGBIN/pgbench" -h "$d" -U postgres -i -q -s 1 postgres >"$d/init.log" 2>&1
	psql_q "$d" 'CREATE EXTENSION IF NOT EXISTS amcheck' >/dev/null
	as_pg "$PGBIN/pg_ctl" -D "$d/$PGDATA_DIR" -m fast stop >/dev/null
	wait "$(cat "$d/server.pid")" 2>/dev/null || true
	sync
	mv "$d/$PGDATA_DIR" "$d/template"
	;;
restore)
	pg_stop "$d"
	rm -rf "$d/$PGDATA_DIR" "$d/server.log" "$d"/.s.PGSQL.*
	cp -a "$d/template" "$d/$PGDATA_DIR"
	;;
*)
	echo "setup.sh: template or restore, not $what" >&2
	exit 2
	;;
esac
