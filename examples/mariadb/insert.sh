#!/usr/bin/env bash
# insert.sh DIR ACKS - the workload of a MariaDB power-cut trial: the
# server (and so whatever preload the caller runs under, syncshim
# crashtest's shim) on DIR/data with the durable commit (common.sh's
# MDB_DURABLE: binlog synced per group commit, redo synced per commit),
# then, until the cut: sysbench oltp_insert with 4 threads (group commits
# of several transactions, rows in four tables) and one client that
# commits `INSERT INTO crash.t VALUES (N, ...)` for N = 1, 2, ... and after
# each commit returned appends "acked N EPOCH_SECONDS" (the server's
# clock, after the commit) to ACKS (keep ACKS outside the crash test's
# scope; the client flushes after every statement, so ACKS can only lag
# the commits).
#
# InnoDB goes through the page cache here (innodb_flush_method=fsync,
# innodb_log_file_buffering=ON): an O_DIRECT write reaches the device past
# the page cache, where crash-test mode's rollback cannot undo it (its
# trials would say "not exact"). The order of syncs, the thing on trial,
# is the same either way.
set -euo pipefail
. "$(dirname "$0")/common.sh"
d=${1:?usage: insert.sh DIR ACKS}
acks=${2:?usage: insert.sh DIR ACKS}
: >"$acks"
mdb_start "$d" --innodb-flush-method=fsync --innodb-log-file-buffering=ON || { tail -n 20 "$d/server.log" >&2; exit 1; }
mdb_sysbench "$d" run --threads=4 --time=0 --events=0 --report-interval=0 >"$d/sysbench.log" 2>&1 &
for ((i = 1; ; i++)); do
	echo "INSERT INTO crash.t VALUES ($i, REPEAT('r', 200)); SELECT CONCAT('acked $i ', UNIX_TIMESTAMP(NOW(6)));"
done | mariadb --no-defaults -S "$d/sock" -uroot --batch --skip-column-names --unbuffered >>"$acks"
