#!/usr/bin/env bash
# insert.sh DB ACKS [ROWS] - sqlite3 with PRAGMA synchronous=FULL, one
# committed INSERT per sqlite3 process, and after each commit returned an
# acknowledgement "acked ID" appended to ACKS (keep ACKS outside a crash
# test's scope). Makes DB (table t) if it is missing. Rows: default 100000.
set -euo pipefail
db=${1:?usage: insert.sh DB ACKS [ROWS]}
acks=${2:?usage: insert.sh DB ACKS [ROWS]}
rows=${3:-100000}
trap 'exit 130' INT TERM
sqlite3 "$db" 'CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v BLOB NOT NULL)'
start=$(sqlite3 "$db" 'SELECT coalesce(max(id), 0) FROM t')
: >"$acks"
for ((i = start + 1; i <= start + rows; i++)); do
	sqlite3 "$db" "PRAGMA synchronous=FULL; INSERT INTO t VALUES($i, randomblob(512));"
	echo "acked $i" >>"$acks"
done
