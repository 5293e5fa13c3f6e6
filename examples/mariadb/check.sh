#!/usr/bin/env bash
# check.sh DIR ACKS [WINDOW_MS] - after a power cut, without any preload:
#  1. mariadb-binlog reads every binary log file the index names to its
#     end (exit 0, no error), as the cut left them;
#  2. the server starts on DIR/data (InnoDB's crash recovery, and the
#     binlog's: prepared transactions the binlog holds are committed, the
#     others rolled back);
#  3. CHECK TABLE ... EXTENDED (mariadb-check) on the databases sbtest,
#     crash and mysql finds nothing;
#  4. the binlog against InnoDB, row by row (setup.sh's RESET MASTER left
#     the binlog holding exactly the runs' inserts): every row an INSERT
#     in the binlog wrote is in its InnoDB table (a binlogged transaction
#     InnoDB lost is one a replica would have and the primary not), and
#     every row InnoDB holds beyond the template's is in the binlog;
#  5. every acknowledged id (ACKS: "acked N EPOCH_SECONDS") is in crash.t,
#     or with WINDOW_MS, every one acknowledged more than WINDOW_MS before
#     the cut ($SYNCSHIM_CRASHTEST_CUT_REALTIME, which syncshim crashtest
#     sets).
# Prints "result: integrity=ok|failed acked=N lost=N lost_oldest_ms=MS
# lost_beyond_window=N binlog_rows=N" (crash_campaign.sh's counters);
# exits 1 on any failure.
set -euo pipefail
unset LD_PRELOAD
. "$(dirname "$0")/common.sh"
d=${1:?usage: check.sh DIR ACKS [WINDOW_MS]}
acks=${2:?usage: check.sh DIR ACKS [WINDOW_MS]}
window=${3:-}
tmp=$(mktemp -d)
trap 'mdb_stop "$d"; rm -rf "$tmp"' EXIT
fail() {
	echo "check.sh: $d: $1"
	[ -z "${2:-}" ] || sed 's/^/  /' "$2" | tail -n 15
	echo "result: integrity=failed"
	exit 1
}

# 1. the binary log as the cut left it, each file to its end
binlog_rows=0
: >"$tmp/binlog.rows"
while read -r f; do
	f=$d/data/${f#./}
	if ! mariadb-binlog --no-defaults -v --base64-output=decode-rows "$f" >"$tmp/binlog.txt" 2>"$tmp/binlog.err" ||
		grep -qi 'error' "$tmp/binlog.err"; then
		cat "$tmp/binlog.txt" >>"$tmp/binlog.err"
		fail "mariadb-binlog cannot read $(basename "$f") to its end:" "$tmp/binlog.err"
	fi
	# "### INSERT INTO `db`.`table`", "### SET", "###   @1=ID": the row's table and id
	awk '/^### INSERT INTO `/ { split($4, p, "`"); tbl = p[2] "." p[4]; next }
		tbl != "" && /^###   @1=/ { sub(/^###   @1=/, ""); print tbl, $0; tbl = "" }' "$tmp/binlog.txt" >>"$tmp/binlog.rows"
done <"$d/data/binlog.index"
binlog_rows=$(wc -l <"$tmp/binlog.rows")

# 2. recovery
mdb_start "$d" --innodb-flush-method=fsync --innodb-log-file-buffering=ON ||
	fail "the server does not start on the rolled-back files (recovery failed):" "$d/server.log"

# 3. CHECK TABLE, every table of the three databases
mariadb-check --no-defaults -S "$d/sock" -uroot --extended --databases sbtest crash mysql >"$tmp/check.out" 2>&1 ||
	fail "mariadb-check failed:" "$tmp/check.out"
# each table's line ends in its status; anything but OK (a note line is indented) fails
bad=$(awk 'NF >= 2 && $1 ~ /\./ && $NF != "OK"' "$tmp/check.out" | head -n 5)
[ -z "$bad" ] || fail "CHECK TABLE reports: $bad" "$tmp/check.out"

# 4. the binlog against InnoDB, table by table
for t in crash.t $(seq -f "sbtest.sbtest%g" 1 "$MDB_TABLES"); do
	base=0
	[ "${t%%.*}" = sbtest ] && base=$MDB_TABLE_SIZE
	mdb_q "$d" "SELECT id FROM $t WHERE id > $base" | sort >"$tmp/innodb.ids" || fail "cannot read $t"
	awk -v t="$t" '$1 == t { print $2 }' "$tmp/binlog.rows" | sort >"$tmp/binlog.ids"
	missing=$(comm -23 "$tmp/binlog.ids" "$tmp/innodb.ids" | wc -l)
	extra=$(comm -13 "$tmp/binlog.ids" "$tmp/innodb.ids" | wc -l)
	# what recovery did (prepared transactions committed or rolled back), for the failure's report
	grep -iE 'prepared|recover|rolled back|rollback|binlog' "$d/server.log" | sed 's/^[0-9 :-]*//' >"$tmp/recovery.log" || true
	[ "$missing" = 0 ] || fail "$missing rows of $t the binlog holds are not in InnoDB (ids $(comm -23 "$tmp/binlog.ids" "$tmp/innodb.ids" | sort -n | head -n 5 | tr '\n' ' ')); the server's recovery said:" "$tmp/recovery.log"
	[ "$extra" = 0 ] || fail "$extra rows of $t InnoDB holds are not in the binlog (ids $(comm -13 "$tmp/binlog.ids" "$tmp/innodb.ids" | sort -n | head -n 5 | tr '\n' ' ')); the server's recovery said:" "$tmp/recovery.log"
done
rows=$(mdb_q "$d" 'SELECT count(*) FROM crash.t')

# 5. the acknowledged ids against crash.t
[ -e "$acks" ] || acks=/dev/null # cut before the workload began
mdb_q "$d" 'SELECT id FROM crash.t' >"$tmp/t.ids"
read -r acked lost beyond oldest < <(awk -v cut="${SYNCSHIM_CRASHTEST_CUT_REALTIME:-}" -v win="${window:-0}" '
	FNR == NR { have[$1] = 1; next }
	$1 == "acked" && NF >= 3 { n++; if (!($2 in have)) { lost++
		if (cut != "") { age = (cut - $3) * 1000; if (age > oldest) oldest = age; if (age > win) beyond++ } } }
	END { printf "%d %d %d %.1f\n", n, lost, beyond, oldest }' "$tmp/t.ids" "$acks")
echo "check.sh: $d: binlog read to its end ($binlog_rows rows); recovered; CHECK TABLE clean; every binlogged row in InnoDB and no other;" \
	"$rows rows in crash.t, $lost of $acked acknowledged lost${window:+, $beyond acknowledged more than $window ms before the cut}"
if [ -n "$window" ] && [ "$beyond" -gt 0 ] || [ -z "$window" ] && [ "$lost" -gt 0 ]; then
	echo "result: integrity=ok acked=$acked lost=$lost lost_oldest_ms=$oldest lost_beyond_window=${window:+$beyond} binlog_rows=$binlog_rows"
	exit 1
fi
echo "result: integrity=ok acked=$acked lost=$lost lost_oldest_ms=$oldest lost_beyond_window=${window:+$beyond} binlog_rows=$binlog_rows"
