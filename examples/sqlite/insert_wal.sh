#!/usr/bin/env bash
# insert_wal.sh DB ACKS [ROWS] - sqlite3 in WAL mode with PRAGMA
# synchronous=FULL: one sqlite3 process, one committed INSERT per
# statement, each followed by ".print acked ID" into ACKS (keep ACKS
# outside a crash test's scope; stdio may hold the last few back, so ACKS
# can only lag the commits), and a checkpoint every 20 WAL pages, so cuts
# land in checkpoints: pages copied into the database, its fsync, then
# the WAL rewritten from its header, the multi-file order ordered defer
# keeps. Makes DB (table t) if it is missing. Rows: default 100000.
# Check with check.sh DB ACKS.
set -euo pipefail
db=${1:?usage: insert_wal.sh DB ACKS [ROWS]}
acks=${2:?usage: insert_wal.sh DB ACKS [ROWS]}
rows=${3:-100000}
trap 'exit 130' INT TERM
start=$(sqlite3 "$db" 'PRAGMA journal_mode=WAL;
	CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v BLOB NOT NULL);
	SELECT coalesce(max(id), 0) FROM t' | tail -n 1)
: >"$acks"
{
	echo 'PRAGMA synchronous=FULL;'
	echo 'PRAGMA wal_autocheckpoint=20;'
	for ((i = start + 1; i <= start + rows; i++)); do
		echo "INSERT INTO t VALUES($i, randomblob(512));"
		echo ".print acked $i"
	done
} | sqlite3 "$db" >>"$acks"
