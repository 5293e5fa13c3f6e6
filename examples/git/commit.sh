#!/usr/bin/env bash
# commit.sh REPO ACKS [COMMITS] - git with core.fsync=all: commits in a
# loop (each changes one of twenty tracked files), and after each commit
# returned an acknowledgement "acked N HASH TIME" appended to ACKS (TIME:
# bash's $EPOCHREALTIME; keep ACKS outside a crash test's scope). REPO
# comes from setup.sh. Commits: default 100000.
set -euo pipefail
repo=${1:?usage: commit.sh REPO ACKS [COMMITS]}
acks=${2:?usage: commit.sh REPO ACKS [COMMITS]}
n=${3:-100000}
trap 'exit 130' INT TERM
: >"$acks"
export GIT_AUTHOR_NAME=ct GIT_AUTHOR_EMAIL=ct@localhost GIT_COMMITTER_NAME=ct GIT_COMMITTER_EMAIL=ct@localhost
for ((i = 1; i <= n; i++)); do
	echo "commit $i $RANDOM" >>"$repo/f$((i % 20))"
	git -C "$repo" commit -q -a -m "commit $i"
	echo "acked $i $(git -C "$repo" rev-parse HEAD) $EPOCHREALTIME" >>"$acks"
done
