#!/usr/bin/env bash
# check.sh DB [WINDOW_MS] - after a power cut: the database must open (its
# recovery replays the WAL into the files the MANIFEST names), pass
# ldb checkconsistency (every SST file the MANIFEST lists is there, with
# its size), and give every key back with its block checksums verified
# (ldb scan reads them all; reads verify checksums). WINDOW_MS is accepted
# for crash_campaign.sh and unused: db_bench acknowledges nothing the
# check could count.
set -euo pipefail
db=${1:?usage: check.sh DB [WINDOW_MS]}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
fail() {
	echo "check.sh: $db: $1"
	sed 's/^/  /' "$tmp" | tail -n 15
	echo "result: integrity=failed"
	exit 1
}
if [ ! -e "$db/CURRENT" ]; then
	# cut before db_bench made the database: nothing was acknowledged
	echo "check.sh: $db: no database yet (cut before it was created)"
	echo "result: integrity=ok keys=0"
	exit 0
fi
ldb --db="$db" checkconsistency >"$tmp" 2>&1 || fail "ldb checkconsistency failed (or the database does not open):"
grep -q '^OK' "$tmp" || fail "ldb checkconsistency did not say OK:"
ldb --db="$db" scan --no_value >"$tmp.keys" 2>"$tmp" || { cat "$tmp.keys" >>"$tmp"; rm -f "$tmp.keys"; fail "ldb scan failed (a checksum or a missing file):"; }
keys=$(wc -l <"$tmp.keys")
rm -f "$tmp.keys"
echo "check.sh: $db: opens, consistent, $keys keys read back with their checksums"
echo "result: integrity=ok keys=$keys"
