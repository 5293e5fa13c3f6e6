#!/usr/bin/env bash
# crashtest.sh - Redis with an always-fsync append-only file, cut again and
# again by `syncshim crashtest` in the server form, checked by redis-check-aof.
#
#   examples/redis/crashtest.sh [-n TRIALS] [-w DIR] [-k DIR] [POLICY | INI]
#
# Per trial: a fresh data directory, redis-server under the policy (default
# defer) or the ini, ready when its Unix socket accepts, redis-benchmark's
# SETs (without the shim) until the cut, a random moment 300-1500 ms into
# the load; every file of the data directory rolled back to what a real
# sync had made durable; then redis-check-aof on the AOF's manifest (the
# AOF must be whole: a torn command fails the trial). -w DIR works in DIR
# (the paths of a profile's ini; made if missing, removed at the end), -k
# DIR keeps the trials that did not pass. syncshim comes from
# $SYNCSHIM_BUILD (default: this tree's build/), else from PATH.
set -euo pipefail

trials=10 work="" keep=()
while getopts "n:w:k:" opt; do
	case $opt in
	n) trials=$OPTARG ;;
	w) work=$OPTARG ;;
	k) keep=(--keep "$OPTARG") ;;
	*) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
side=${1:-defer}
how=(-p "$side")
[ -f "$side" ] && how=(-c "$side")
here=$(cd "$(dirname "$0")" && pwd)
syncshim=${SYNCSHIM_BUILD:-$here/../../build}/syncshim
[ -x "$syncshim" ] || syncshim=syncshim
if [ -n "$work" ]; then
	mkdir -p "$work"
	tmp=$(cd "$work" && pwd)
else
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncshim-redis.XXXXXX")
fi
trap 'rm -rf "$tmp"' EXIT
D=$tmp/redis S=$tmp/redis.sock

"$syncshim" crashtest -n "$trials" "${how[@]}" "${keep[@]}" --cut random:300-1500 --scope "$D/**" \
	--setup "rm -rf '$D' && mkdir '$D'" --ready "unix:$S" \
	--load "redis-benchmark -s '$S' -t set -n 100000000 -c 8 -q" \
	--check "redis-check-aof '$D/appendonlydir/appendonly.aof.manifest'" -- \
	redis-server --port 0 --unixsocket "$S" --dir "$D" --appendonly yes --appendfsync always --save '' \
	--daemonize no
