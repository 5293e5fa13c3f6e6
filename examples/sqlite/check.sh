#!/usr/bin/env bash
# check.sh DB ACKS [WINDOW_MS] - after a power cut: sqlite3's own PRAGMA
# integrity_check (sqlite3 first rolls back a hot journal or replays the
# WAL, as on any open after a crash), then the rows against the
# acknowledgements insert.sh wrote.
# Without WINDOW_MS: exits 1 if the database is damaged or lost any
# acknowledged row. With it (a relaxed policy's promise): a lost row is
# allowed if it was acknowledged at most WINDOW_MS before the cut
# ($SYNCSHIM_CRASHTEST_CUT_REALTIME, which syncshim crashtest sets); exits
# 1 if the database is damaged or lost a row acknowledged earlier. In
# rollback-journal mode the newest acknowledged row may be lost whatever
# its age: FULL does not sync the directory after the journal's unlink,
# which is the commit, and sqlite documents that the last transaction can
# roll back after a power loss (the next commit's syncs make it durable).
set -euo pipefail
db=${1:?usage: check.sh DB ACKS [WINDOW_MS]}
acks=${2:?usage: check.sh DB ACKS [WINDOW_MS]}
window=${3:-}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.ids"' EXIT
if ! sqlite3 "$db" 'PRAGMA integrity_check' >"$tmp" 2>&1 || [ "$(cat "$tmp")" != ok ]; then
	echo "check.sh: $db: integrity_check FAILED:"
	sed 's/^/  /' "$tmp" | head -n 20
	echo "result: integrity=failed"
	exit 1
fi
[ -e "$acks" ] || acks=/dev/null # cut before the workload began
acked=$(awk '$1 == "acked" { n = $2 } END { print n + 0 }' "$acks")
sqlite3 "$db" "SELECT id FROM t WHERE id <= $acked" >"$tmp.ids"
rows=$(wc -l <"$tmp.ids")
lost=$((acked - rows))
journal=$(sqlite3 "$db" 'PRAGMA journal_mode')
newest_free=0
[ "$journal" = wal ] || newest_free=$acked
# the lost acknowledgements' age at the cut, and how many are older than the window
read -r beyond oldest < <(awk -v cut="${SYNCSHIM_CRASHTEST_CUT_REALTIME:-}" -v win="${window:-0}" -v free="$newest_free" '
	FNR == NR { have[$1] = 1; next }
	$1 == "acked" && !($2 in have) && cut != "" && NF >= 3 && $2 != free {
		age = (cut - $3) * 1000; if (age > oldest) oldest = age; if (age > win) beyond++ }
	END { printf "%d %.1f\n", beyond, oldest }' "$tmp.ids" "$acks")
echo "check.sh: $db: integrity_check ok; $rows of $acked acknowledged rows there, $lost lost${window:+, $beyond acknowledged more than $window ms before the cut}"
echo "result: integrity=ok acked=$acked rows=$rows lost=$lost lost_oldest_ms=$oldest lost_beyond_window=${window:+$beyond}"
if [ -n "$window" ]; then
	[ "$beyond" -eq 0 ]
else
	[ "$lost" -eq 0 ]
fi
