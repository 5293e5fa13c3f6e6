#!/usr/bin/env bash
# mutate.sh [-l LIST] [-t SECONDS] [-j JOBS] [-b] [NAME...] - the suite's
# own strength, measured: apply each one-line mutation of LIST (default
# tests/mutations/mutations.txt; the format is described there) in turn
# to a scratch copy of the tree (never the working tree), build it, run
# the suites the mutation names (or the whole `make test` when it names
# none) with a time bound, and report each mutation killed (a suite
# failed or hit the bound) or survived, and the kill rate. A mutation
# that does not apply or does not build is reported apart and not counted.
#
#   -t SECONDS  bound on each suite run (default 600)
#   -j JOBS     make -j and criterion --jobs (default 1: the machine is shared)
#   -b          first run every named suite on the unmutated copy; a suite
#               that fails there makes its mutations "unsure", not killed
#   NAME...     only these mutations
#
# The scratch copy is ../syncshim-mutate.XXXXXX beside the tree (MUTATE_TMPDIR
# elsewhere; removed at the end, kept
# with KEEP=1); the build directory is copied along, so each mutation
# rebuilds one object and relinks.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIST=$ROOT/tests/mutations/mutations.txt
BOUND=600
JOBS=1
BASELINE=0
while getopts "l:t:j:b" o; do
	case $o in
	l) LIST=$(cd "$(dirname "$OPTARG")" && pwd)/$(basename "$OPTARG") ;;
	t) BOUND=$OPTARG ;;
	j) JOBS=$OPTARG ;;
	b) BASELINE=1 ;;
	*) sed -n '2,19p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
ONLY=" $* "

# Not under /tmp by default: suites that run programs in a mount namespace
# with a private /tmp would lose the tree's binaries there.
SCRATCH=$(mktemp -d "${MUTATE_TMPDIR:-$PWD/..}/syncshim-mutate.XXXXXX")
# mktemp makes it 0700: the whole make test runs servers and programs as
# other users (nobody, postgres), which must reach the copy's build.
chmod 755 "$SCRATCH"
trap '[ -n "${KEEP:-}" ] && echo "mutate.sh: scratch kept in $SCRATCH" >&2 || rm -rf "$SCRATCH"' EXIT
trap 'exit 130' INT TERM
T=$SCRATCH/tree
mkdir "$T"
# Everything but .git (a worktree's .git names the real repository).
tar -C "$ROOT" --exclude=./.git -cf - . | tar -C "$T" -xf -
B=$T/build

# ---- the list ------------------------------------------------------------
NAMES=() FILES=() SEDS=() SUITES=() WHYS=()
parse() {
	local name="" file="" sedx="" suites="" why="" line key val
	flush() {
		if [ -n "$name" ]; then
			NAMES+=("$name") FILES+=("$file") SEDS+=("$sedx") SUITES+=("$suites") WHYS+=("$why")
		fi
		name="" file="" sedx="" suites="" why=""
	}
	while IFS= read -r line || [ -n "$line" ]; do
		case $line in
		'#'*) continue ;;
		'') flush; continue ;;
		esac
		key=${line%%:*}
		val=${line#*:}
		val=${val# }
		case $key in
		name) name=$val ;;
		file) file=$val ;;
		sed) sedx=$val ;;
		suites) suites=$val ;;
		why) why=$val ;;
		*) echo "mutate.sh: $LIST: unknown field: $line" >&2; exit 2 ;;
		esac
	done <"$LIST"
	flush
}
parse

log() { echo "$*" | tee -a "$SCRATCH/report.txt"; }

# run_suite SPEC: 0 passed, 1 failed, 124 timed out, 3 no such suite in
# this tree (another branch's, not landed yet: neither kills nor spares),
# 4 the filter selects no test (the list is out of date)
run_suite() {
	local spec=$1 bin filter
	bin=${spec%%:*}
	filter=
	[ "$bin" != "$spec" ] && filter=${spec#*:}
	if [ "$bin" = none ]; then
		timeout "$BOUND" make -C "$T" --no-print-directory test >"$SCRATCH/suite.log" 2>&1
		return
	fi
	[ -n "$(find "$T/tests" -name "$bin.c" -print -quit)" ] || return 3
	make -C "$T" --no-print-directory -j"$JOBS" "build/tests/$bin" >>"$SCRATCH/build.log" 2>&1 || return 1
	local args=(--jobs "$JOBS")
	[ -n "$filter" ] && args+=(--filter "$filter")
	local rc=0
	SYNCSHIM_BUILD=$B timeout "$BOUND" "$B/tests/$bin" "${args[@]}" >"$SCRATCH/suite.log" 2>&1 || rc=$?
	# A filter that selects nothing passes: a renamed suite would make
	# every mutation it guards a false survivor.
	if [ "$rc" = 0 ] && grep -q "Tested: 0 " "$SCRATCH/suite.log"; then
		return 4
	fi
	return "$rc"
}

echo "mutate.sh: building the scratch copy in $T" >&2
make -C "$T" --no-print-directory -j"$JOBS" all test-deps >"$SCRATCH/build.log" 2>&1 || {
	echo "mutate.sh: the unmutated tree does not build:" >&2
	tail -n 20 "$SCRATCH/build.log" >&2
	exit 1
}

declare -A SUSPECT=()
if [ "$BASELINE" = 1 ]; then
	for i in "${!NAMES[@]}"; do
		[ "$ONLY" != "  " ] && [[ $ONLY != *" ${NAMES[$i]} "* ]] && continue
		for s in ${SUITES[$i]:-none}; do
			[ -n "${SUSPECT[$s]+x}" ] && continue
			if run_suite "$s"; then SUSPECT[$s]=0; else SUSPECT[$s]=1; log "baseline: $s fails unmutated"; fi
		done
	done
fi

killed=0 survived=0 unsure=0 broken=0
SURVIVORS=()
for i in "${!NAMES[@]}"; do
	name=${NAMES[$i]} file=${FILES[$i]}
	[ "$ONLY" != "  " ] && [[ $ONLY != *" $name "* ]] && continue
	src=$T/$file
	if [ ! -f "$src" ]; then
		# Moved (the tree's layout changes): the one file of that name
		# under the same top folder.
		found=$(find "$T/${file%%/*}" -name "$(basename "$file")" 2>/dev/null)
		[ -n "$found" ] && [ "$(echo "$found" | wc -l)" = 1 ] && src=$found
	fi
	if [ ! -f "$src" ]; then
		log "BROKEN    $name: no file $file"
		broken=$((broken + 1))
		continue
	fi
	cp -p "$src" "$SCRATCH/orig"
	sed -i -e "${SEDS[$i]}" "$src"
	if cmp -s "$src" "$SCRATCH/orig"; then
		log "BROKEN    $name: the expression changes nothing in $file"
		broken=$((broken + 1))
		cp -p "$SCRATCH/orig" "$src"
		continue
	fi
	start=$(date +%s)
	if ! make -C "$T" --no-print-directory -j"$JOBS" all test-deps >"$SCRATCH/build.log" 2>&1; then
		log "BROKEN    $name: does not build ($(grep -m1 'error:' "$SCRATCH/build.log" || echo '?'))"
		broken=$((broken + 1))
	else
		by="" maybe="" missing="" empty=""
		for s in ${SUITES[$i]:-none}; do
			rc=0
			run_suite "$s" || rc=$?
			if [ "$rc" = 3 ]; then
				missing="$missing ${s%%:*}"
				continue
			fi
			if [ "$rc" = 4 ]; then
				empty="$empty $s"
				continue
			fi
			if [ "$rc" != 0 ]; then
				if [ "${SUSPECT[$s]:-0}" = 1 ]; then
					maybe=$s
					continue
				fi
				by=$s
				if [ "$rc" = 124 ]; then by="$s (time bound)"; fi
				cp "$SCRATCH/suite.log" "$SCRATCH/killed-$name.log"
				break
			fi
		done
		secs=$(($(date +%s) - start))
		if [ -n "$by" ]; then
			log "KILLED    $name by $by (${secs}s)"
			killed=$((killed + 1))
		elif [ -n "$empty" ]; then
			log "BROKEN    $name: no test matches$empty (fix the list)"
			broken=$((broken + 1))
		elif [ -n "$maybe" ]; then
			log "UNSURE    $name: only $maybe failed, and it fails unmutated too"
			unsure=$((unsure + 1))
		else
			log "SURVIVED  $name: ${WHYS[$i]} (${secs}s; ran ${SUITES[$i]:-make test}${missing:+; not in this tree:$missing})"
			survived=$((survived + 1))
			SURVIVORS+=("$name")
		fi
	fi
	# Back to the original, with a fresh time stamp: the next build
	# recompiles it.
	cp "$SCRATCH/orig" "$src"
	touch "$src"
done

total=$((killed + survived))
rate=$(awk -v k=$killed -v t=$total 'BEGIN { if (t) printf "%.1f", 100 * k / t; else print "n/a" }')
log ""
log "mutations: $total counted, $killed killed, $survived survived, $unsure unsure, $broken not applied"
log "kill rate: $rate%"
[ ${#SURVIVORS[@]} -gt 0 ] && log "survivors: ${SURVIVORS[*]}"
exit 0
