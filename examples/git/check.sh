#!/usr/bin/env bash
# check.sh REPO ACKS [WINDOW_MS] - after a power cut: git fsck --full
# (every object reachable from the refs present and whole), then the
# acknowledged commits against HEAD's history. Without WINDOW_MS any lost
# acknowledged commit fails; with it, only one acknowledged more than
# WINDOW_MS before the cut ($SYNCSHIM_CRASHTEST_CUT_REALTIME).
#
# The index is a cache git rebuilds from HEAD, and git 2.39's commit does
# not fsync it before renaming index.lock over it (strace shows the write
# and the rename, no fsync, whatever core.fsync says): a cut can leave it
# empty. So a damaged index is rebuilt (git read-tree HEAD, as a user
# would) and said (index=rebuilt); the verdict is the object store's and
# the refs'. The newest acknowledged commit may be lost whatever its age:
# git renames the ref's lock over the ref and syncs no directory, so the
# rename is durable only with the next sync (the next commit's first
# object), as on any file system that journals names in order.
set -euo pipefail
repo=${1:?usage: check.sh REPO ACKS [WINDOW_MS]}
acks=${2:?usage: check.sh REPO ACKS [WINDOW_MS]}
window=${3:-}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.hist"' EXIT
[ -e "$acks" ] || acks=/dev/null
index=ok
if ! git -C "$repo" ls-files >/dev/null 2>&1; then
	index=rebuilt
	rm -f "$repo/.git/index" "$repo/.git/index.lock" # a lock the cut left
	git -C "$repo" read-tree HEAD 2>/dev/null || index=unreadable
fi
if ! git -C "$repo" fsck --full --no-dangling >"$tmp" 2>&1 || grep -qiE 'error|missing|broken|corrupt|bad' "$tmp"; then
	echo "check.sh: $repo: git fsck FAILED:"
	sed 's/^/  /' "$tmp" | head -n 20
	echo "result: integrity=failed"
	exit 1
fi
if ! git -C "$repo" rev-list HEAD >"$tmp.hist" 2>"$tmp"; then
	echo "check.sh: $repo: no history at HEAD:"
	sed 's/^/  /' "$tmp" | head -n 5
	echo "result: integrity=failed"
	exit 1
fi
newest=$(awk '$1 == "acked" { n = $2 } END { print n + 0 }' "$acks")
read -r acked lost beyond oldest < <(awk -v cut="${SYNCSHIM_CRASHTEST_CUT_REALTIME:-}" -v win="${window:-0}" -v free="$newest" '
	FNR == NR { have[$1] = 1; next }
	$1 == "acked" { acked++; if (!($3 in have)) { lost++
		if (cut != "" && $2 != free) { age = (cut - $4) * 1000; if (age > oldest) oldest = age; if (age > win) beyond++ } } }
	END { printf "%d %d %d %.1f\n", acked, lost, beyond, oldest }' "$tmp.hist" "$acks")
echo "check.sh: $repo: fsck clean (index $index); $((acked - lost)) of $acked acknowledged commits in HEAD's history, $lost lost${window:+, $beyond acknowledged more than $window ms before the cut}"
echo "result: integrity=ok index=$index acked=$acked lost=$lost lost_oldest_ms=$oldest lost_beyond_window=${window:+$beyond}"
if [ -n "$window" ]; then
	[ "$beyond" -eq 0 ]
else
	[ "$lost" -eq 0 ]
fi
