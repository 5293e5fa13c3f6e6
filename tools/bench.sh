#!/usr/bin/env bash
# bench.sh BUILD_DIR [SECTION...] - the benchmarks behind BENCHMARKS.md.
#
# Every number is a ratio against a baseline run side by side in the same
# invocation: configurations are interleaved round by round (A B C A B C
# ...) so drift on a shared machine hits all of them, and each cell is the
# median over the rounds. Sections: overhead syncwrites group latency
# writeback kahadb agreement crashtest (default: all). ROUNDS overrides the rounds.
set -euo pipefail

B=$(cd "${1:?usage: bench.sh BUILD_DIR [SECTION...]}" && pwd)
shift
SECTIONS=${*:-overhead syncwrites group latency writeback kahadb agreement crashtest}
SHIM=$B/libsyncshim.so
RUN=$B/syncshim
EX=$B/examples
WORK=$(mktemp -d /tmp/syncshim-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

field() { # field NAME < "result: a=1 b=2"
	sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | tail -n 1
}
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b == 0 || b == "nan" || a == "nan") print "n/a"; else printf "%.3f", a/b}'; }

# run_cfg NAME CMD... : appends the result line of one run to $WORK/NAME.out
run_cfg() {
	local name=$1; shift
	"$@" 2>/dev/null | grep '^result:' >>"$WORK/$name.out" || echo "result: failed=1" >>"$WORK/$name.out"
}
med() { field "$2" <"$WORK/$1.out" | median; } # med NAME FIELD (over all lines)
medall() { while read -r l; do echo "$l" | field "$2"; done <"$WORK/$1.out" | median; }
minall() { while read -r l; do echo "$l" | field "$2"; done <"$WORK/$1.out" | sort -g | head -n 1; }

section_overhead() {
	local rounds=${ROUNDS_OVERHEAD:-25} n=200000
	echo "## Overhead of interposition and logging (tight 4 KiB pwrite loop)"
	echo
	echo "\`pwrite_loop -n $n -s 4096\` on a tmpfs file (page cache only, no writeback to compete); logs on tmpfs too. $rounds rounds, the order of the four configurations rotated each round. Each run reports wall time and the calling thread's own CPU time per call (CLOCK_THREAD_CPUTIME_ID: the app's cost, not the logger thread's, and less disturbed by other tenants); ratios of medians, and of minima (the least disturbed run)."
	echo
	local dir=/dev/shm/syncshim-bench.$$ cfgs=(none off summary calls)
	mkdir -p "$dir"
	for ((r = 0; r < rounds; r++)); do
		for ((k = 0; k < 4; k++)); do
			rm -f "$dir"/*.log*
			case ${cfgs[(r + k) % 4]} in
			none) run_cfg none "$EX/pwrite_loop" -n $n -f "$dir/pw.dat" ;;
			off) run_cfg off env LD_PRELOAD="$SHIM" "$EX/pwrite_loop" -n $n -f "$dir/pw.dat" ;;
			summary) run_cfg summary env LD_PRELOAD="$SHIM" SYNCSHIM_LOG="$dir/s.log" \
				"$EX/pwrite_loop" -n $n -f "$dir/pw.dat" ;;
			calls) run_cfg calls env LD_PRELOAD="$SHIM" SYNCSHIM_LOG="$dir/c.log" SYNCSHIM_LOG_MODE=calls \
				"$EX/pwrite_loop" -n $n -f "$dir/pw.dat" ;;
			esac
		done
	done
	rm -rf "$dir"
	local bc bw mc mw
	bc=$(medall none cpu_ns_per_call); bw=$(medall none ns_per_call)
	mc=$(minall none cpu_ns_per_call); mw=$(minall none ns_per_call)
	echo "| configuration | CPU ns/call (median) | ratio | ratio of minima | wall ns/call (median) | ratio | target |"
	echo "|---|---|---|---|---|---|---|"
	echo "| no shim | $bc | 1.000 | 1.000 | $bw | 1.000 | |"
	for c in off:1.02 summary:1.05 calls:1.15; do
		local name=${c%%:*} vc vw
		vc=$(medall "$name" cpu_ns_per_call); vw=$(medall "$name" ns_per_call)
		echo "| shim, logging $name | $vc | $(ratio "$vc" "$bc") | $(ratio "$(minall "$name" cpu_ns_per_call)" "$mc") | $vw | $(ratio "$vw" "$bw") | <= ${c#*:} |"
	done
	echo
}

section_syncwrites() {
	local rounds=${ROUNDS:-5}
	echo "## Sync-writes loop (4 KiB append + fsync, one thread)"
	echo
	echo "\`sync_writes -s 4096 -t 2\` under each policy and under Debian's libeatmydata; $rounds rounds interleaved; median writes/s."
	echo
	for ((r = 1; r <= rounds; r++)); do
		for p in passthrough fdatasync group defer noop; do
			run_cfg "sw_$p" "$RUN" run -p "$p" -- "$EX/sync_writes" -t 2 -n 100000000 -f "$WORK/sw.dat"
		done
		run_cfg sw_eatmydata eatmydata "$EX/sync_writes" -t 2 -n 100000000 -f "$WORK/sw.dat"
	done
	local pt noop
	pt=$(medall sw_passthrough writes_per_sec)
	noop=$(medall sw_noop writes_per_sec)
	echo "| policy | writes/s | vs passthrough | vs noop |"
	echo "|---|---|---|---|"
	for p in passthrough fdatasync group defer noop eatmydata; do
		local v
		v=$(medall "sw_$p" writes_per_sec)
		echo "| $p | $v | $(ratio "$v" "$pt") | $(ratio "$v" "$noop") |"
	done
	echo
	echo "Targets: defer >= 0.8x noop and >= 20x passthrough."
	echo
}

section_group() {
	local rounds=${ROUNDS:-3}
	echo "## Group commit, 8 threads appending with fsync to one file"
	echo
	echo "\`sync_writes -T 8 -s 4096 -t 2\`; $rounds rounds interleaved; median writes/s."
	echo
	for ((r = 1; r <= rounds; r++)); do
		for p in passthrough group fdatasync; do
			run_cfg "g8_$p" "$RUN" run -p "$p" -- "$EX/sync_writes" -T 8 -t 2 -n 100000000 -f "$WORK/g8.dat"
		done
	done
	local pt
	pt=$(medall g8_passthrough writes_per_sec)
	echo "| policy | writes/s | vs passthrough |"
	echo "|---|---|---|"
	for p in passthrough group fdatasync; do
		local v
		v=$(medall "g8_$p" writes_per_sec)
		echo "| $p | $v | $(ratio "$v" "$pt") |"
	done
	echo
	echo "Target: group >= 4x passthrough."
	echo
}

section_latency() {
	local rounds=${ROUNDS:-3}
	echo "## App-visible fsync latency under defer"
	echo
	echo "\`sync_writes -n 20000\`, latency measured by the program around each fsync; $rounds rounds interleaved; medians."
	echo
	for ((r = 1; r <= rounds; r++)); do
		for p in passthrough defer; do
			run_cfg "lat_$p" "$RUN" run -p "$p" -- "$EX/sync_writes" -n 20000 -f "$WORK/lat.dat"
		done
	done
	echo "| policy | fsync p50 (us) | fsync p99 (us) | fsync max (us) |"
	echo "|---|---|---|---|"
	for p in passthrough defer; do
		echo "| $p | $(medall "lat_$p" sync_p50_us) | $(medall "lat_$p" sync_p99_us) | $(medall "lat_$p" sync_max_us) |"
	done
	echo
}

section_writeback() {
	local rounds=${ROUNDS:-2} secs=${WB_SECONDS:-8} rate=${WB_RATE:-40}
	echo "## Round-robin appends (writeback stalls), with and without writeback_bytes"
	echo
	echo "\`roundrobin_stall -n 10 -r $rate -t $secs\` (4 KiB appends over 10 files, no sync); the files are under a defer rule, with and without \`writeback_bytes = 1M\`; $rounds rounds interleaved; medians."
	echo
	mkdir -p "$WORK/rr"
	printf '[rule rr]\npath = %s/rr/**\nsync = defer\n' "$WORK" >"$WORK/rr-plain.ini"
	printf '[rule rr]\npath = %s/rr/**\nsync = defer\nwriteback_bytes = 1M\n' "$WORK" >"$WORK/rr-wb.ini"
	for ((r = 1; r <= rounds; r++)); do
		run_cfg rr_plain "$RUN" run -c "$WORK/rr-plain.ini" -- "$EX/roundrobin_stall" -d "$WORK/rr" -n 10 -r "$rate" -t "$secs"
		run_cfg rr_wb "$RUN" run -c "$WORK/rr-wb.ini" -- "$EX/roundrobin_stall" -d "$WORK/rr" -n 10 -r "$rate" -t "$secs"
	done
	echo "| configuration | MB/s | write p99 (us) | write max (us) | worst second's max (ms) |"
	echo "|---|---|---|---|---|"
	for c in plain wb; do
		echo "| $c | $(medall "rr_$c" mb_per_sec) | $(medall "rr_$c" write_p99_us) | $(medall "rr_$c" write_max_us) | $(medall "rr_$c" worst_second_max_ms) |"
	done
	echo
}

section_kahadb() {
	local rounds=${ROUNDS:-2}
	local cp=/usr/share/java
	local jars="$cp/activemq-kahadb-store.jar:$cp/activemq-client.jar:$cp/hawtbuf.jar:$cp/geronimo-jms_1.1_spec.jar:$cp/slf4j-api.jar:$cp/slf4j-nop.jar"
	echo "## KahaDB DiskBenchmark (FileChannel.force(true) per write)"
	echo
	echo "\`java -cp ... org.apache.activemq.store.kahadb.disk.util.DiskBenchmark --bs=4096 --size=20000000 --sample-interval=2000\` (Debian libactivemq-java); $rounds rounds interleaved; median sync writes/s."
	echo
	for ((r = 1; r <= rounds; r++)); do
		for p in passthrough fdatasync group defer; do
			(cd "$WORK" && "$RUN" run -p "$p" -- java -cp "$jars" org.apache.activemq.store.kahadb.disk.util.DiskBenchmark \
				--bs=4096 --size=20000000 --sample-interval=2000 2>/dev/null) |
				awk '/^Sync Writes:/ {s=1} s && /writes\/second/ {print "result: sync_writes_per_sec=" $1; exit}' >>"$WORK/kd_$p.out" || true
		done
	done
	local pt
	pt=$(medall kd_passthrough sync_writes_per_sec)
	echo "| policy | sync writes/s | vs passthrough |"
	echo "|---|---|---|"
	for p in passthrough fdatasync group defer; do
		local v
		v=$(medall "kd_$p" sync_writes_per_sec)
		echo "| $p | $v | $(ratio "$v" "$pt") |"
	done
	echo
}

section_agreement() {
	local rounds=${ROUNDS:-3}
	echo "## synclat's fsync latency against fio's own measurement of the same calls"
	echo
	echo "fio (\`--rw=write --bs=4k --size=8m --fsync=1\`) runs under the shim with logging on: both measure the same fsync calls, fio around the call and the shim inside it. $rounds rounds; medians of each side's p50 and p99."
	echo
	for ((r = 1; r <= rounds; r++)); do
		rm -f "$WORK"/ag.*
		"$RUN" run -p passthrough -o "$WORK/ag.log" -- fio --name=ag --filename="$WORK/ag.dat" --rw=write --bs=4k \
			--size=8m --fsync=1 --output-format=json --output="$WORK/ag.json" >/dev/null 2>&1 || continue
		python3 - "$WORK/ag.json" >>"$WORK/ag_fio.out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]["sync"]["lat_ns"]["percentile"]
print("result: p50_us=%.2f p99_us=%.2f" % (j["50.000000"] / 1e3, j["99.000000"] / 1e3))
PY
		"$B/synclat" report --csv "$WORK"/ag.log* | awk -F, '
			NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
			$col["kind"] == "op" && $col["name"] == "app" && $col["op"] == "fsync" {
				printf "result: p50_us=%.2f p99_us=%.2f\n", $col["p50_ns"] / 1e3, $col["p99_ns"] / 1e3 }' >>"$WORK/ag_shim.out"
	done
	local fp50 fp99 sp50 sp99
	fp50=$(medall ag_fio p50_us); fp99=$(medall ag_fio p99_us)
	sp50=$(medall ag_shim p50_us); sp99=$(medall ag_shim p99_us)
	echo "| measurement | fsync p50 (us) | fsync p99 (us) |"
	echo "|---|---|---|"
	echo "| fio (around the call) | $fp50 | $fp99 |"
	echo "| synclat (inside the shim) | $sp50 | $sp99 |"
	echo "| synclat / fio | $(ratio "$sp50" "$fp50") | $(ratio "$sp99" "$fp99") |"
	echo
}

# crash_store DIR: a fresh undo store (the directory and undo.log with its
# magic, as syncshim crashtest makes them); prints its path.
crash_store() {
	rm -rf "$1"
	mkdir -p "$1"
	printf 'SSUNDO1\n' >"$1/undo.log"
	echo "$1"
}

# crash_run NAME STORE SCOPE CMD...: one run in crash-test mode; the undo
# log's size goes on the result line as undo_bytes.
crash_run() {
	local name=$1 store=$2 scope=$3 line
	shift 3
	line=$(SYNCSHIM_CRASH_DIR=$store SYNCSHIM_CRASH_SCOPE=$scope "$@" 2>/dev/null | grep '^result:') || line="result: failed=1"
	echo "$line undo_bytes=$(stat -c %s "$store/undo.log")" >>"$WORK/$name.out"
}

section_crashtest() {
	local rounds=${ROUNDS:-3} secs=${CT_SECONDS:-2} dir=$WORK/ct n=20000
	echo "## Crash-test mode: what tracking costs, and the undo store's size"
	echo
	echo "\`sync_writes -s 4096 -t $secs\` (append + fsync) and \`pwrite_loop -n $n -s 4096\` (overwrites in the page cache) under passthrough, without and with crash-test mode (\`SYNCSHIM_CRASH_DIR\`, the file in scope); $rounds rounds interleaved; medians. The store's size is the undo log's at the end, per MiB the program wrote."
	echo
	mkdir -p "$dir/data"
	for ((r = 1; r <= rounds; r++)); do
		rm -f "$dir"/data/*
		run_cfg ct_sw_plain "$RUN" run -p passthrough -- "$EX/sync_writes" -t "$secs" -n 100000000 -f "$dir/data/sw.dat"
		rm -f "$dir"/data/*
		crash_run ct_sw_crash "$(crash_store "$dir/store")" "$dir/data/*" \
			"$RUN" run -p passthrough -- "$EX/sync_writes" -t "$secs" -n 100000000 -f "$dir/data/sw.dat"
		rm -f "$dir"/data/*
		run_cfg ct_pw_plain "$RUN" run -p passthrough -- "$EX/pwrite_loop" -n $n -f "$dir/data/pw.dat"
		rm -f "$dir"/data/*
		crash_run ct_pw_crash "$(crash_store "$dir/store")" "$dir/data/*" \
			"$RUN" run -p passthrough -- "$EX/pwrite_loop" -n $n -f "$dir/data/pw.dat"
	done
	rm -rf "$dir"
	local swp swc pwp pwc
	swp=$(medall ct_sw_plain writes_per_sec); swc=$(medall ct_sw_crash writes_per_sec)
	pwp=$(medall ct_pw_plain ns_per_call); pwc=$(medall ct_pw_crash ns_per_call)
	# bytes of undo log per MiB written: sync_writes wrote writes x 4 KiB, pwrite_loop n x 4 KiB
	local swstore pwstore
	swstore=$(while read -r l; do w=$(echo "$l" | field writes); u=$(echo "$l" | field undo_bytes)
		awk -v w="$w" -v u="$u" 'BEGIN { if (w > 0) printf "%.0f\n", u / (w * 4096 / 1048576) }'; done <"$WORK/ct_sw_crash.out" | median)
	pwstore=$(while read -r l; do u=$(echo "$l" | field undo_bytes)
		awk -v u="$u" -v n=$n 'BEGIN { printf "%.0f\n", u / (n * 4096 / 1048576) }'; done <"$WORK/ct_pw_crash.out" | median)
	echo "| workload | without | with crash-test mode | ratio | undo store bytes per MiB written |"
	echo "|---|---|---|---|---|"
	echo "| sync_writes, writes/s | $swp | $swc | $(ratio "$swc" "$swp") | $swstore |"
	echo "| pwrite_loop, ns/call | $pwp | $pwc | $(ratio "$pwc" "$pwp") | $pwstore |"
	echo
	echo "An append's record holds no pre-image (72 bytes, and one DURABLE record per sync); an overwrite's holds the bytes it replaced, so the store grows by about what the program wrote."
	echo
}

echo "# Benchmark run $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n), kernel $(uname -r), $(nproc) cores"
echo
for s in $SECTIONS; do
	"section_$s"
done
