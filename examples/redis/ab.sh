#!/usr/bin/env bash
# ab.sh - Redis with an always-fsync append-only file, A/B under syncshim.
#
#   examples/redis/ab.sh [-n ROUNDS] [-r REQUESTS] [-c CLIENTS] [-o DIR] [A [B]]
#
# One `syncshim ab` command: per round, A B A B, a fresh data directory,
# redis-server --appendfsync always under the side's policy (default A
# passthrough, B defer; a policy name or an ini file), ready when its Unix
# socket accepts, redis-benchmark's SET requests/s (without the shim) as
# the figure, then SIGTERM. It prints each side's median and spread, the
# B/A ratio and the server's sync-latency table (synclat compare). Redis
# listens on a Unix socket in a temp dir only (no TCP port); the temp dir
# is removed at the end unless -o DIR keeps the outputs. syncshim comes
# from $SYNCSHIM_BUILD (default: this tree's build/), else from PATH.
set -euo pipefail

rounds=3 requests=20000 clients=8 out=""
here=$(cd "$(dirname "$0")" && pwd)
ab_name=redis ab_opt=r ab_var=requests
. "$here/../ab_common.sh"
sock=$tmp/redis.sock

"$syncshim" ab -n "$rounds" -o "$run" "$a" "$b" \
	--setup "rm -rf '$tmp/data' && mkdir '$tmp/data'" \
	--ready "unix:$sock" \
	--load "redis-benchmark -s '$sock' -t set -n $requests -c $clients -q" \
	--metric 'SET: ([0-9.]+) requests per second' \
	-- redis-server --port 0 --unixsocket "$sock" --dir "$tmp/data" \
	--appendonly yes --appendfsync always --save '' --daemonize no
