#!/usr/bin/env bash
# setup.sh template DIR - a datadir in DIR/template: mariadb-install-db,
# then (the server up without any wrapper) the sysbench tables
# (`sysbench oltp_insert prepare`, database sbtest) and the crash
# workload's table crash.t (id, v), then RESET MASTER (the binary log
# starts empty: it holds exactly what a run adds) and a clean shutdown.
# setup.sh restore DIR - DIR/data afresh from the template (each run's or
# trial's initial state).
set -euo pipefail
. "$(dirname "$0")/common.sh"
what=${1:?usage: setup.sh template|restore DIR}
d=${2:?usage: setup.sh template|restore DIR}
case $what in
template)
	mkdir -p "$d"
	mdb_stop "$d"
	rm -rf "$d/template" "$d/data"
	mariadb-install-db --no-defaults --datadir="$d/data" --user=root --auth-root-authentication-method=socket \
		--skip-test-db >"$d/install.log" 2>&1 || { tail -n 20 "$d/install.log" >&2; exit 1; }
	mdb_start "$d" || { tail -n 20 "$d/server.log" >&2; exit 1; }
	mdb_q "$d" 'CREATE DATABASE sbtest; CREATE DATABASE crash;
		CREATE TABLE crash.t (id BIGINT NOT NULL PRIMARY KEY, v VARCHAR(255) NOT NULL) ENGINE=InnoDB'
	mdb_sysbench "$d" prepare --threads=2 >"$d/prepare.log" 2>&1 || { tail -n 20 "$d/prepare.log" >&2; exit 1; }
	mdb_q "$d" 'RESET MASTER'
	mdb_stop "$d"
	sync
	mv "$d/data" "$d/template"
	;;
restore)
	mdb_stop "$d"
	rm -rf "$d/server.pid" "$d/data" "$d/sock" "$d/server.log" "$d/server.out"
	cp -a --sparse=always "$d/template" "$d/data"
	;;
*)
	echo "setup.sh: template or restore, not $what" >&2
	exit 2
	;;
esac
