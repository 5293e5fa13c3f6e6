# common.sh - sourced by the MariaDB scripts (the benchmark's services
# section, the mariadb power-cut campaign): a throwaway server in a
# directory of its own, never the system's instance.
#
# DIR/data is the datadir, DIR/sock the only way in (--skip-networking),
# DIR/server.log its error log. --no-defaults everywhere: nothing of
# /etc/mysql is read. The server runs as root (--user=root): it changes no
# credentials, and an undo store of crash-test mode made by root stays
# open to it.
MDB_SERVER=${MDB_SERVER:-$(command -v mariadbd || echo /usr/sbin/mariadbd)}
[ -x "$MDB_SERVER" ] || { echo "mariadb: no mariadbd (apt-get install mariadb-server)" >&2; exit 2; }
# The durable commit of issue 27: the binary log on and synced at every
# group commit, the redo log synced at every commit, so each group commit
# writes and syncs two logs, redo then binlog. Rows in the binlog
# (binlog_format=ROW), so that a check can name every row it holds.
MDB_DURABLE=(--log-bin=binlog --server-id=1 --binlog-format=ROW --sync-binlog=1
	--innodb-flush-log-at-trx-commit=1)
# MDB_PRE: a wrapper the server alone runs under (syncshim run ..., eatmydata).
MDB_PRE=()

# mdb_start DIR [SETTING...]: the server in the background, with
# MDB_DURABLE then SETTINGs (a later one wins); returns once it answers.
mdb_start() {
	local d=$1 i
	shift
	rm -f "$d/sock" "$d/mariadbd.pid"
	"${MDB_PRE[@]}" "$MDB_SERVER" --no-defaults --datadir="$d/data" --socket="$d/sock" --skip-networking \
		--pid-file="$d/mariadbd.pid" --log-error="$d/server.log" --user=root \
		--innodb-buffer-pool-size=128M --max-connections=64 "${MDB_DURABLE[@]}" "$@" </dev/null >>"$d/server.out" 2>&1 &
	echo $! >"$d/server.pid"
	for ((i = 0; i < 600; i++)); do
		mariadb-admin --no-defaults -S "$d/sock" -uroot ping >/dev/null 2>&1 && return 0
		kill -0 "$(cat "$d/server.pid")" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# mdb_stop DIR: a clean shutdown (the server exits normally, so a shim's
# exit barrier and counters run), SIGKILL if it has not ended in 60 s.
mdb_stop() {
	local d=$1 pid i
	pid=$(cat "$d/server.pid" 2>/dev/null) || return 0
	rm -f "$d/server.pid"
	mariadb-admin --no-defaults -S "$d/sock" -uroot --shutdown-timeout=60 shutdown >/dev/null 2>&1 || true
	# a pid file a cut left behind may name a pid reused since: wait for
	# and kill only this directory's server (or the wrapper it runs under)
	tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "--datadir=$d/data " || return 0
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

mdb_q() { # mdb_q DIR SQL: tab-separated rows, no headers
	mariadb --no-defaults -S "$1/sock" -uroot --batch --skip-column-names -e "$2"
}

# The sysbench tables (oltp_insert): MDB_TABLES tables of MDB_TABLE_SIZE rows.
MDB_TABLES=${MDB_TABLES:-4}
MDB_TABLE_SIZE=${MDB_TABLE_SIZE:-1000}
mdb_sysbench() { # mdb_sysbench DIR prepare|run [SYSBENCH OPTION...]
	local d=$1 what=$2
	shift 2
	sysbench oltp_insert --db-driver=mysql --mysql-socket="$d/sock" --mysql-user=root --mysql-db=sbtest \
		--tables="$MDB_TABLES" --table-size="$MDB_TABLE_SIZE" "$@" "$what"
}
