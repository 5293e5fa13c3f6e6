# common.sh - sourced by the PostgreSQL crash-test scripts: where the
# binaries are, running them as the postgres user (PostgreSQL refuses
# root; runuser keeps the environment, so a shim in LD_PRELOAD stays), and
# starting and stopping a cluster in DIR/pgdata (DIR/$PGDATA_DIR) reached only through a unix
# socket in DIR (no TCP). runuser, not setpriv: setpriv changes its
# capabilities in one thread before setresgid, which glibc then aborts on
# (setxid_error) in a process that has another thread, as it does under
# the shim's defer (its flusher).
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[ -x "$PGBIN/postgres" ] || { echo "postgres: no PostgreSQL under /usr/lib/postgresql (apt-get install postgresql)" >&2; exit 2; }
as_pg() { runuser -u postgres -- "$@"; }
PGPORT=${PGPORT:-5432} # the socket's name only: listen_addresses is empty
# The cluster's directory under DIR: pgdata, or data in crashtest.sh, the
# layout of ab.sh -w DIR, so that the rules a profile proposes match.
PGDATA_DIR=${PGDATA_DIR:-pgdata}
export PGPORT PGDATA_DIR
# pg_start DIR [SETTING...]: the server in the background; waits until it answers
pg_start() {
	local d=$1 i
	shift
	as_pg "$PGBIN/postgres" -D "$d/$PGDATA_DIR" -k "$d" -c listen_addresses= "$@" >>"$d/server.log" 2>&1 &
	echo $! >"$d/server.pid"
	for ((i = 0; i < 600; i++)); do
		as_pg "$PGBIN/pg_isready" -q -h "$d" && return 0
		kill -0 "$(cat "$d/server.pid")" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
pg_stop() { # immediate: nothing of it is worth keeping
	as_pg "$PGBIN/pg_ctl" -D "$1/$PGDATA_DIR" -m immediate stop >/dev/null 2>&1 || true
	wait "$(cat "$1/server.pid" 2>/dev/null)" 2>/dev/null || true
}
psql_q() { # psql_q DIR SQL: one value per line, no headers
	as_pg "$PGBIN/psql" -X -q -A -t -h "$1" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$2"
}
# The server's settings for the trials: small shared buffers, and with
# the template's 1 MiB WAL segments (initdb --wal-segsize=1) a WAL of a few
# segments, so pages are written and checkpoints recycle WAL segments (by
# rename) every few hundred transactions, even on a slow machine.
PG_TRIAL_SETTINGS=(-c shared_buffers=16MB -c max_wal_size=4MB -c min_wal_size=4MB -c checkpoint_timeout=30s
	-c fsync=on -c synchronous_commit=on -c full_page_writes=on)
