#!/usr/bin/env bash
# check.sh DB ACKS - after a power cut: sqlite3's own PRAGMA integrity_check
# (sqlite3 first rolls back a hot journal, as on any open after a crash),
# then the rows against the acknowledgements insert.sh wrote. Exits 1 if
# the database is damaged or lost an acknowledged row, 0 if not.
set -euo pipefail
db=${1:?usage: check.sh DB ACKS}
acks=${2:?usage: check.sh DB ACKS}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
if ! sqlite3 "$db" 'PRAGMA integrity_check' >"$tmp" 2>&1 || [ "$(cat "$tmp")" != ok ]; then
	echo "check.sh: $db: integrity_check FAILED:"
	sed 's/^/  /' "$tmp"
	exit 1
fi
acked=$(awk '$1 == "acked" { n = $2 } END { print n + 0 }' "$acks")
rows=$(sqlite3 "$db" "SELECT count(*) FROM t WHERE id <= $acked")
lost=$((acked - rows))
echo "check.sh: $db: integrity_check ok; $rows of $acked acknowledged rows there, $lost lost"
echo "result: integrity=ok acked=$acked rows=$rows lost=$lost"
[ "$lost" -eq 0 ]
