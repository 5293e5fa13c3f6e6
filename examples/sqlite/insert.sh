#!/usr/bin/env bash
# insert.sh DB ACKS [ROWS] [MODE] - sqlite3 with PRAGMA synchronous=FULL,
# one committed INSERT at a time, and after each commit returned an
# acknowledgement "acked ID TIME" appended to ACKS (TIME: bash's
# $EPOCHREALTIME; keep ACKS outside a crash test's scope). Makes DB
# (table t) if it is missing. Rows: default 100000. MODE:
#   delete  (default) rollback-journal mode, one sqlite3 process per INSERT
#   wal     WAL mode, one connection for the whole run, checkpointing every
#           $WAL_AUTOCHECKPOINT pages (default 100), so checkpoints (pages
#           copied into DB, then the WAL overwritten from its start) happen
#           every few hundred commits
#   delete1 rollback-journal mode with one connection for the whole run:
#           each commit writes and syncs the journal, overwrites the
#           database's pages, syncs them and unlinks the journal, all in
#           one process (under defer: its syncs are still owed when the
#           next commit begins)
set -euo pipefail
db=${1:?usage: insert.sh DB ACKS [ROWS] [delete|wal|delete1]}
acks=${2:?usage: insert.sh DB ACKS [ROWS] [delete|wal|delete1]}
rows=${3:-100000}
mode=${4:-delete}
trap 'exit 130' INT TERM
sqlite3 "$db" 'CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, v BLOB NOT NULL)'
start=$(sqlite3 "$db" 'SELECT coalesce(max(id), 0) FROM t')
: >"$acks"
case $mode in
delete)
	for ((i = start + 1; i <= start + rows; i++)); do
		sqlite3 "$db" "PRAGMA synchronous=FULL; INSERT INTO t VALUES($i, randomblob(512));"
		echo "acked $i $EPOCHREALTIME" >>"$acks"
	done
	;;
wal | delete1)
	journal=WAL
	[ "$mode" = wal ] || journal=DELETE
	coproc SQL { exec sqlite3 -batch "$db"; }
	echo "PRAGMA journal_mode=$journal; PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=${WAL_AUTOCHECKPOINT:-100};" >&"${SQL[1]}"
	read -r _ <&"${SQL[0]}" # the journal mode
	read -r _ <&"${SQL[0]}" # the checkpoint interval
	for ((i = start + 1; i <= start + rows; i++)); do
		# the SELECT answers once the INSERT's transaction committed
		echo "INSERT INTO t VALUES($i, randomblob(512)); SELECT $i;" >&"${SQL[1]}"
		read -r done <&"${SQL[0]}"
		[ "$done" = "$i" ] || { echo "insert.sh: sqlite3 said '$done' for row $i" >&2; exit 1; }
		echo "acked $i $EPOCHREALTIME" >>"$acks"
	done
	;;
*)
	echo "insert.sh: MODE is delete or wal, not $mode" >&2
	exit 2
	;;
esac
