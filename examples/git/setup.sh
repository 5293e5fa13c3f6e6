#!/usr/bin/env bash
# setup.sh REPO [ACKS] - a fresh repository with core.fsync=all (every
# object, ref and the index fsynced before git says it is done) and twenty
# tracked files; removes ACKS.
set -euo pipefail
repo=${1:?usage: setup.sh REPO [ACKS]}
rm -rf "$repo"
[ -z "${2:-}" ] || rm -f "$2"
git init -q "$repo"
git -C "$repo" config core.fsync all
git -C "$repo" config core.fsyncMethod fsync
git -C "$repo" config gc.auto 0
git -C "$repo" config maintenance.auto false
for ((i = 0; i < 20; i++)); do echo "file $i" >"$repo/f$i"; done
git -C "$repo" add -A
GIT_AUTHOR_NAME=ct GIT_AUTHOR_EMAIL=ct@localhost GIT_COMMITTER_NAME=ct GIT_COMMITTER_EMAIL=ct@localhost \
	git -C "$repo" commit -q -m initial
