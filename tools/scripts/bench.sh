#!/usr/bin/env bash
# bench.sh BUILD_DIR [SECTION...] - the benchmarks behind docs/PERFORMANCE.md
# (and the history in docs/bench-log.md).
#
# Every number is a ratio against a baseline run side by side in the same
# invocation: configurations are interleaved round by round (A B C A B C
# ...) so drift on a shared machine hits all of them, and each cell is the
# median over the rounds. Sections: overhead syncwrites group latency
# writeback kahadb pgbench exec window manyfiles agreement crashtest syscall uring
# qemu ordered services (default: all). ROUNDS
# overrides the rounds of every section (ordered: ORDER_SECONDS, ORDER_REDIS_N, ORDER_PG_SECONDS,
# ORDER_SQLITE_ROWS; syscall: SYSCALL_LOOPS, TRAP_LOOPS; uring: FIO_SIZE; qemu:
# QEMU_COUNT; services: SVC_SECONDS, SVC_SQLITE_ROWS, SVC_REDIS_N, SVC_LOG_SECONDS,
# SVC_SERVICES (default "activemq mariadb postgres sqlite redis log"), SVC_BASELINE (another
# build directory, e.g. main's: its defer runs side by side as the baseline)). Other knobs, for trials:
# ROUNDS_OVERHEAD, WB_SECONDS, WB_RATE, GROUP_FS (default "tmp ext4 xfs
# btrfs"), GROUP_SECONDS, GROUP_FS_SIZE (each loop image, default 1G),
# PG_SECONDS (each pgbench run, default 10), EXEC_COUNT (spawns per run,
# default 1000), WINDOW_SECONDS, CT_FILES (the crashtest rollback of many
# files, default 20000), MANY_FS (default "tmp shm"), MANY_BASELINE
# (another build directory, e.g. main's: its shim runs side by side in the
# manyfiles section, for up to MANY_OLD_MAX files, default 20000). A default run takes ~10 minutes on a
# 2-core VM.
#
# Everything that touches a disk runs on the file system of /tmp (WORK
# below), except the group section's loop-mounted file systems, whose
# images live there too. Root is needed for those mounts and for running
# PostgreSQL as its own user.
set -euo pipefail

B=$(cd "${1:?usage: bench.sh BUILD_DIR [SECTION...]}" && pwd)
shift
SECTIONS=${*:-overhead syncwrites group latency writeback kahadb pgbench exec window manyfiles agreement crashtest syscall uring qemu ordered services}
SHIM=$B/libsyncshim.so
RUN=$B/syncshim
EX=$B/examples
RECLAYER=$B/tests/lib/reclayer.so
EATMYDATA=$(ls /usr/lib/*/libeatmydata.so 2>/dev/null | head -n 1 || true)
WORK=$(mktemp -d /tmp/syncshim-bench.XXXXXX)

# Cleanup: sections push commands (servers to stop, file systems to
# unmount) and pop them when done; whatever is left runs, last pushed
# first, on any exit, failed or interrupted. WORK goes last, after every
# unmount: never rm -rf through a mount point.
CLEANUP=()
push_cleanup() { CLEANUP+=("$1"); }
pop_cleanup() { # runs and forgets the newest command
	local c=${CLEANUP[${#CLEANUP[@]}-1]}
	unset 'CLEANUP[${#CLEANUP[@]}-1]'
	eval "$c" || true
}
cleanup() {
	while ((${#CLEANUP[@]})); do pop_cleanup; done
	if grep -q " $WORK/" /proc/mounts; then
		echo "bench.sh: something is still mounted under $WORK; left in place" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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
runs() { # runs NAME FIELD: every run's value in run order, rounded (noise at a glance)
	while read -r l; do echo "$l" | field "$2"; done <"$WORK/$1.out" | awk '{printf "%s%.0f", (NR > 1 ? " " : ""), $1}'
}
minall() { while read -r l; do echo "$l" | field "$2"; done <"$WORK/$1.out" | sort -g | head -n 1; }

section_overhead() {
	local rounds=${ROUNDS_OVERHEAD:-${ROUNDS:-25}} n=200000
	echo "## Overhead of interposition and logging (tight 4 KiB pwrite loop)"
	echo
	echo "\`pwrite_loop -n $n -s 4096\` on a tmpfs file (page cache only, no writeback to compete); logs on tmpfs too. $rounds rounds, the order of the six configurations rotated each round. Each run reports wall time and the calling thread's own CPU time per call (CLOCK_THREAD_CPUTIME_ID: the app's cost, not the logger thread's, and less disturbed by other tenants); ratios of medians, and of minima (the least disturbed run)."
	echo
	echo "Two baselines: the loop alone (one thread), and the loop with one idle thread beside it (\`pwrite_loop -i\`, no shim). Once a process has a second thread the kernel's \`fdget\` takes and drops a file reference on every fd call instead of its single-threaded fast path; logging starts the shim's logger thread, so the logging rows pay that too, as every host with threads of its own (every JVM) already does."
	echo
	local dir=/dev/shm/syncshim-bench.$$ cfgs=(none none_mt off summary calls live)
	mkdir -p "$dir"
	push_cleanup "rm -rf '$dir'"
	for ((r = 0; r < rounds; r++)); do
		for ((k = 0; k < ${#cfgs[@]}; k++)); do
			rm -f "$dir"/*.log*
			case ${cfgs[(r + k) % ${#cfgs[@]}]} in
			none) run_cfg none "$EX/pwrite_loop" -n $n -f "$dir/pw.dat" ;;
			none_mt) run_cfg none_mt "$EX/pwrite_loop" -i -n $n -f "$dir/pw.dat" ;;
			off) run_cfg off env LD_PRELOAD="$SHIM" "$EX/pwrite_loop" -n $n -f "$dir/pw.dat" ;;
			summary) run_cfg summary env LD_PRELOAD="$SHIM" SYNCSHIM_LOG="$dir/s.log" \
				"$EX/pwrite_loop" -n $n -f "$dir/pw.dat" ;;
			calls) run_cfg calls env LD_PRELOAD="$SHIM" SYNCSHIM_LOG="$dir/c.log" SYNCSHIM_LOG_MODE=calls \
				"$EX/pwrite_loop" -n $n -f "$dir/pw.dat" ;;
			live) run_cfg live env LD_PRELOAD="$SHIM" SYNCSHIM_LIVE=1 SYNCSHIM_LIVE_DIR="$dir/live" \
				"$EX/pwrite_loop" -n $n -f "$dir/pw.dat" ;;
			esac
		done
	done
	pop_cleanup
	local bc bw mc bcm mcm
	bc=$(medall none cpu_ns_per_call); bw=$(medall none ns_per_call); mc=$(minall none cpu_ns_per_call)
	bcm=$(medall none_mt cpu_ns_per_call); mcm=$(minall none_mt cpu_ns_per_call)
	echo "| configuration | CPU ns/call (median) | vs no shim | vs no shim, 2 threads | ratio of minima (1 / 2 threads) | wall ns/call (median) | wall ratio | target |"
	echo "|---|---|---|---|---|---|---|---|"
	echo "| no shim | $bc | 1.000 | $(ratio "$bc" "$bcm") | 1.000 / $(ratio "$mc" "$mcm") | $bw | 1.000 | |"
	for c in none_mt:no_shim,_idle_thread: off:shim,_logging_off:1.02 summary:shim,_logging_summary:1.05 calls:shim,_logging_calls:1.15 live:shim,_live_counters_on,_logging_off:; do
		local name=${c%%:*} rest=${c#*:} label target vc vw vm
		label=${rest%%:*}; label=${label//_/ }; target=${rest#*:}
		vc=$(medall "$name" cpu_ns_per_call); vw=$(medall "$name" ns_per_call); vm=$(minall "$name" cpu_ns_per_call)
		echo "| $label | $vc | $(ratio "$vc" "$bc") | $(ratio "$vc" "$bcm") | $(ratio "$vm" "$mc") / $(ratio "$vm" "$mcm") | $vw | $(ratio "$vw" "$bw") | ${target:+<= $target} |"
	done
	echo
	echo "Targets (issue 11): logging summary <= 1.05x and calls <= 1.15x; the logging rows are stated against both baselines. The live counters (issue 10) add one packed counter update per write and start a publisher thread: their row against the two-thread baseline is the counters' own cost."
	echo
}

section_syncwrites() {
	local rounds=${ROUNDS:-5}
	echo "## Sync-writes loop (4 KiB append + fsync, one thread)"
	echo
	echo "\`sync_writes -s 4096 -t 2\` under each policy and under Debian's libeatmydata, and two ceilings with no shim: the same loop with no sync at all (\`sync_writes -m none\`), and with no sync in the loop but a thread of its own that fdatasyncs the file every 100 ms (\`-m none -b 100\`, defer's default window written by hand: the data reaches the disk, as under defer); $rounds rounds interleaved; median writes/s. The file is on /tmp's file system."
	echo
	local p
	for ((r = 1; r <= rounds; r++)); do
		for p in passthrough fdatasync group defer noop; do
			run_cfg "sw_$p" "$RUN" run -p "$p" -- "$EX/sync_writes" -t 2 -n 100000000 -f "$WORK/sw.dat"
		done
		run_cfg sw_eatmydata eatmydata "$EX/sync_writes" -t 2 -n 100000000 -f "$WORK/sw.dat"
		run_cfg sw_ceiling "$EX/sync_writes" -m none -t 2 -n 100000000 -f "$WORK/sw.dat"
		run_cfg sw_bgsync "$EX/sync_writes" -m none -b 100 -t 2 -n 100000000 -f "$WORK/sw.dat"
	done
	local pt noop ceil emd
	pt=$(medall sw_passthrough writes_per_sec)
	noop=$(medall sw_noop writes_per_sec)
	ceil=$(medall sw_ceiling writes_per_sec)
	emd=$(medall sw_eatmydata writes_per_sec)
	echo "| policy | writes/s | vs passthrough | vs noop | vs no-sync ceiling | app fsync p99 (us) |"
	echo "|---|---|---|---|---|---|"
	for p in passthrough fdatasync group defer noop eatmydata ceiling bgsync; do
		local v p99
		v=$(medall "sw_$p" writes_per_sec)
		p99=$(medall "sw_$p" sync_p99_us)
		[ "$p" = ceiling ] || [ "$p" = bgsync ] && p99="-"
		echo "| $p | $v | $(ratio "$v" "$pt") | $(ratio "$v" "$noop") | $(ratio "$v" "$ceil") | $p99 |"
	done
	echo
	echo "| target (issue 11) | measured | target |"
	echo "|---|---|---|"
	echo "| defer vs no-sync ceiling | $(ratio "$(medall sw_defer writes_per_sec)" "$ceil") | >= 0.9 |"
	echo "| (by hand, no shim: a syncing thread every 100 ms vs no-sync ceiling) | $(ratio "$(medall sw_bgsync writes_per_sec)" "$ceil") | |"
	echo "| defer vs that by-hand loop | $(ratio "$(medall sw_defer writes_per_sec)" "$(medall sw_bgsync writes_per_sec)") | |"
	echo "| noop vs libeatmydata | $(ratio "$noop" "$emd") | >= 1.3 |"
	echo "| (the most any policy can reach: no-sync ceiling vs libeatmydata) | $(ratio "$ceil" "$emd") | |"
	echo "| defer app-visible fsync p99 (us) | $(medall sw_defer sync_p99_us) | <= 5 |"
	echo
	echo "Older targets: defer >= 0.8x noop and >= 20x passthrough."
	echo
}

# mount_loop_fs TYPE DIR: a fresh TYPE file system on a sparse image file
# under WORK (so on /tmp's file system), loop-mounted on DIR; unmounting it
# and deleting the image is pushed onto CLEANUP. The image is never resized
# while mounted.
mount_loop_fs() {
	local type=$1 mnt=$2 img=$WORK/$1.img
	truncate -s "${GROUP_FS_SIZE:-1G}" "$img"
	case $type in
	ext4) mkfs.ext4 -q -F "$img" ;;
	xfs) mkfs.xfs -q -f "$img" ;;
	btrfs) mkfs.btrfs -q -f "$img" >/dev/null ;;
	*) echo "bench.sh: unknown file system $type" >&2; return 1 ;;
	esac
	mkdir -p "$mnt"
	mount -o loop "$img" "$mnt"
	push_cleanup "unmount_fs '$mnt'; rm -f '$img'"
}
unmount_fs() {
	local mnt=$1 i
	for i in 1 2 3 4 5; do
		mountpoint -q "$mnt" || return 0
		umount "$mnt" 2>/dev/null && return 0
		sleep 1
	done
	umount -l "$mnt" # still busy after 5 s: detach it now, the kernel frees it when idle
}

# dev_flushes DIR: flush requests completed so far by the loop device
# DIR is mounted from (field 16 of /sys/block/loopN/stat), or "" when DIR
# is not on a loop device: there other tenants' flushes would mix in.
dev_flushes() {
	local dev
	dev=$(findmnt -no SOURCE --target "$1" 2>/dev/null) || return 0
	case $dev in /dev/loop*) ;; *) return 0 ;; esac
	awk '{print $16}' "/sys/block/${dev#/dev/}/stat" 2>/dev/null || true
}

# flushes_per_call POLICY THREADS DIR OUT: one 1 s run; writes "calls
# flushes" (flushes empty off a loop device) to OUT.
flushes_per_call() {
	local f0 f1 calls
	f0=$(dev_flushes "$3")
	calls=$("$RUN" run -p "$1" -- "$EX/sync_writes" -T "$2" -t 1 -n 100000000 -f "$3/g.dat" 2>/dev/null |
		field writes) || true
	f1=$(dev_flushes "$3")
	if [ -n "$f0" ] && [ -n "$f1" ]; then
		echo "${calls:-0} $((f1 - f0))" >"$4"
	else
		echo "${calls:-0}" >"$4"
	fi
}

# real_per_call LOG...: "REAL CALLS" from a shim log in summary mode: the
# real syncs the shim made (real_fsync, real_fdatasync) and the app's sync
# calls (fsync, fdatasync).
real_per_call() {
	"$B/synclat" report --csv "$@" | awk -F, '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$col["kind"] != "op" { next }
		$col["op"] == "real_fsync" || $col["op"] == "real_fdatasync" { real += $col["count"] }
		$col["name"] == "app" && ($col["op"] == "fsync" || $col["op"] == "fdatasync") { calls += $col["count"] }
		END { printf "%d %d\n", real, calls }'
}

section_group() {
	local rounds=${ROUNDS:-3} secs=${GROUP_SECONDS:-2} fslist=${GROUP_FS:-tmp ext4 xfs btrfs}
	local fs t p r dir
	echo "## Group commit on ext4, XFS and btrfs, 1 and 8 threads appending with fsync to one file"
	echo
	echo "\`sync_writes -T THREADS -s 4096 -t $secs\` under passthrough and group; $rounds rounds interleaved per file system; median writes/s. \`tmp\` is /tmp's own file system ($(findmnt -no FSTYPE,SOURCE --target /tmp 2>/dev/null || echo '?')); ext4, xfs and btrfs are fresh file systems made with default options on a sparse ${GROUP_FS_SIZE:-1G} image file under /tmp, loop-mounted (\`mount -o loop\`): the loop device turns each flush into an fsync of the image file on the host's file system, so absolute rates are the loop stack's, and only the side-by-side ratio means anything. Real syncs / calls: a separate 1 s run under group, counted twice: outside the shim, the real fsync/fdatasync calls recorded beneath it by tests/lib/reclayer.so (\`RECLAYER_OPS=fsync,fdatasync\`) against the program's own count of its fsync calls (one per write); and by the shim's own summary log (\`synclat report --csv\`: real_fsync + real_fdatasync against the app's fsync calls)."
	echo
	for fs in $fslist; do
		if [ "$fs" = tmp ]; then
			dir=$WORK/g-tmp
			mkdir -p "$dir"
		else
			dir=$WORK/mnt-$fs
			mount_loop_fs "$fs" "$dir"
		fi
		for ((r = 1; r <= rounds; r++)); do
			for t in 1 8; do
				for p in passthrough group; do
					run_cfg "g_${fs}_${t}_$p" "$RUN" run -p "$p" -- \
						"$EX/sync_writes" -T "$t" -t "$secs" -n 100000000 -f "$dir/g.dat"
				done
			done
		done
		for t in 1 8; do
			rm -f "$WORK"/gc.log* "$WORK/gc.rec"
			LD_PRELOAD="$SHIM:$RECLAYER" SYNCSHIM_POLICY=group SYNCSHIM_LOG="$WORK/gc.log" \
				RECLAYER_LOG="$WORK/gc.rec" RECLAYER_OPS=fsync,fdatasync \
				"$EX/sync_writes" -T "$t" -t 1 -n 100000000 -f "$dir/g.dat" 2>/dev/null |
				field writes >"$WORK/gc_${fs}_$t.calls" || true
			local nrec ncalls nlog
			nrec=$(grep -c ' ret=0 ' "$WORK/gc.rec" 2>/dev/null || true)
			ncalls=$(cat "$WORK/gc_${fs}_$t.calls")
			nlog=$(real_per_call "$WORK"/gc.log* 2>/dev/null || true)
			echo "${nrec:-0} ${ncalls:-0} ${nlog:-0 0}" >"$WORK/gc_${fs}_$t.out"
			for p in passthrough group; do
				flushes_per_call "$p" "$t" "$dir" "$WORK/gf_${fs}_${t}_$p.out"
			done
		done
		[ "$fs" = tmp ] || pop_cleanup
	done
	echo "| file system | threads | passthrough writes/s | group writes/s | group vs passthrough | target | real syncs / calls under group (recorded beneath) | (shim's log) | device flushes / calls: passthrough, group |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for fs in $fslist; do
		for t in 1 8; do
			local pt g target real calls sreal scalls
			pt=$(medall "g_${fs}_${t}_passthrough" writes_per_sec)
			g=$(medall "g_${fs}_${t}_group" writes_per_sec)
			case $fs:$t in
			tmp:1 | ext4:1 | xfs:1) target=">= 0.98" ;;
			tmp:8 | ext4:8) target=">= 1.0" ;;
			xfs:8) target=">= 1.5" ;;
			btrfs:8) target=">= 5" ;;
			*) target="" ;;
			esac
			read -r real calls sreal scalls <"$WORK/gc_${fs}_$t.out"
			local fl="" q fc ff
			for q in passthrough group; do
				read -r fc ff <"$WORK/gf_${fs}_${t}_$q.out"
				[ -n "$ff" ] && fl="$fl${fl:+, }$ff / $fc = $(ratio "$ff" "$fc")"
			done
			echo "| $fs | $t | $pt | $g | $(ratio "$g" "$pt") | $target | $real / $calls = $(ratio "$real" "$calls") | $sreal / $scalls = $(ratio "$sreal" "$scalls") | ${fl:--} |"
		done
	done
	echo
	echo "Device flushes / calls: one more 1 s run of each, counting the flush requests the loop device completed (/sys/block/loopN/stat, field 16) per fsync call: below 1 under passthrough means the file system already shares one flush among concurrent fsyncs (group commit of its own), which bounds what group can add; \`-\` where the file system is not on a loop device of its own."
	echo
	echo "Targets (issue 11): 1 thread >= 0.98x on ext4 and XFS; 8 threads >= 1.0x on ext4, >= 1.5x on XFS, >= 5x on btrfs; fewer real syncs than calls everywhere."
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
	local rounds=${ROUNDS:-5}
	local cp=/usr/share/java p r k cfgs=(none passthrough fdatasync group defer)
	local jars="$cp/activemq-kahadb-store.jar:$cp/activemq-client.jar:$cp/hawtbuf.jar:$cp/geronimo-jms_1.1_spec.jar:$cp/slf4j-api.jar:$cp/slf4j-nop.jar"
	local cmd=(java -cp "$jars" org.apache.activemq.store.kahadb.disk.util.DiskBenchmark
		--bs=4096 --size=20000000 --sample-interval=2000)
	echo "## KahaDB DiskBenchmark (FileChannel.force(true) per write)"
	echo
	echo "\`java -cp ... org.apache.activemq.store.kahadb.disk.util.DiskBenchmark --bs=4096 --size=20000000 --sample-interval=2000\` (Debian libactivemq-java) in a directory under /tmp, with no shim (none: the same java command without the launcher) and under \`syncshim run -p POLICY\`; $rounds rounds interleaved, the order rotated each round (a run follows a different one each time: defer leaves the disk busiest); median sync writes/s."
	echo
	for ((r = 0; r < rounds; r++)); do
		for ((k = 0; k < ${#cfgs[@]}; k++)); do
			p=${cfgs[(r + k) % ${#cfgs[@]}]}
			local pre=()
			[ "$p" = none ] || pre=("$RUN" run -p "$p" --)
			(cd "$WORK" && "${pre[@]}" "${cmd[@]}" 2>/dev/null) |
				awk '/^Sync Writes:/ {s=1} s && /writes\/second/ {print "result: sync_writes_per_sec=" $1; exit}' >>"$WORK/kd_$p.out" || true
		done
	done
	local none pt
	none=$(medall kd_none sync_writes_per_sec)
	pt=$(medall kd_passthrough sync_writes_per_sec)
	echo "| policy | sync writes/s | vs none | vs passthrough | target | each run |"
	echo "|---|---|---|---|---|---|"
	for p in none passthrough fdatasync group defer; do
		local v target=""
		v=$(medall "kd_$p" sync_writes_per_sec)
		case $p in passthrough | fdatasync | group) target=">= 0.98 vs none" ;; esac
		echo "| $p | $v | $(ratio "$v" "$none") | $(ratio "$v" "$pt") | $target | $(runs "kd_$p" sync_writes_per_sec) |"
	done
	echo
	echo "Target (issue 11): the durable policies (passthrough, fdatasync, group) >= 0.98x none."
	echo
}

# pg_stop DIR: stop the throwaway server in DIR if it runs (fast shutdown,
# then immediate after 20 s), and wait for the process that started it.
pg_stop() {
	local dir=$1 bin=$2
	if [ -f "$dir/data/postmaster.pid" ]; then
		runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m fast -t 20 -w stop >/dev/null 2>&1 ||
			runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	if [ -f "$dir/starter.pid" ]; then
		wait "$(cat "$dir/starter.pid")" 2>/dev/null || true
		rm -f "$dir/starter.pid"
	fi
}

# pg_cpu_ticks DIR: CPU time (clock ticks) of the server in DIR so far:
# the postmaster's own and that of its children it has reaped (backends
# that have exited), plus each live child's own.
pg_cpu_ticks() {
	local pm pid t=0 f
	pm=$(head -n 1 "$1/data/postmaster.pid")
	for pid in "$pm" $(pgrep -P "$pm" || true); do
		f=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null) || continue
		# after the comm: state is field 1, utime 12, stime 13, cutime 14, cstime 15
		t=$((t + $(echo "$f" | awk -v pm=$((pid == pm)) '{print $12 + $13 + (pm ? $14 + $15 : 0)}')))
	done
	echo "$t"
}

# pg_start DIR BIN PORT CONFIG: start the server in the background, with
# the shim under policy CONFIG or with none; 0 once it accepts connections.
pg_start() {
	local dir=$1 bin=$2 port=$3 cfg=$4 pre=() i
	[ "$cfg" = none ] || pre=("$RUN" run -p "$cfg" --)
	runuser -u postgres -- "${pre[@]}" "$bin/postgres" -D "$dir/data" -k "$dir" -p "$port" \
		-c listen_addresses= >>"$dir/server.log" 2>&1 &
	echo $! >"$dir/starter.pid"
	for ((i = 0; i < 300; i++)); do
		"$bin/pg_isready" -q -h "$dir" -p "$port" && return 0
		kill -0 "$(cat "$dir/starter.pid")" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

section_pgbench() {
	local rounds=${ROUNDS:-3} secs=${PG_SECONDS:-10} bin p r k cfgs=(none passthrough fdatasync group)
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	echo "## PostgreSQL pgbench -N, 8 clients"
	echo
	if [ -z "$bin" ] || ! id postgres >/dev/null 2>&1; then
		echo "Skipped: Debian's postgresql is not installed (\`make bench-deps\`)."
		echo
		return 0
	fi
	local dir=$WORK/pg port=$((20000 + $$ % 20000))
	echo "A throwaway cluster (\`initdb\`, $("$bin/postgres" --version | sed 's/.*) //'), default settings: fsync on, synchronous_commit on, wal_sync_method fdatasync) in a directory under /tmp owned by the postgres user, reached only through a unix socket in that directory (port $port, no TCP). \`pgbench -i\` once (scale 1), then per run: the server started under the configuration (none: the postgres command alone; else \`syncshim run -p POLICY -- postgres ...\`, the shim in the postmaster and every backend), \`pgbench -N -c 8 -j 2 -T $secs\`, the server stopped. $rounds rounds interleaved, the order rotated each round; median tps (without initial connection time). With 8 clients on 2 cores this is as much a CPU benchmark as a disk one, and the disk is shared: the CPU time of all the server's processes per transaction (user + system, from /proc, the postmaster's and every backend's, over the pgbench run alone) is steadier than tps and shows what the shim itself costs."
	echo
	# WORK is 0700 root; postgres needs to reach its own directory in it.
	chmod 711 "$WORK"
	mkdir -p "$dir"
	chown postgres: "$dir"
	push_cleanup "pg_stop '$dir' '$bin'"
	runuser -u postgres -- "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1
	if ! pg_start "$dir" "$bin" "$port" none ||
		! runuser -u postgres -- "$bin/pgbench" -h "$dir" -p "$port" -U postgres -i -q postgres >"$dir/init.log" 2>&1; then
		echo "Failed to set up the cluster; server log:"
		echo
		sed 's/^/    /' "$dir/server.log" | tail -n 20
		echo
		pop_cleanup
		return 0
	fi
	pg_stop "$dir" "$bin"
	for ((r = 0; r < rounds; r++)); do
		for ((k = 0; k < ${#cfgs[@]}; k++)); do
			p=${cfgs[(r + k) % ${#cfgs[@]}]}
			local res="result: failed=1" c0 c1=""
			if pg_start "$dir" "$bin" "$port" "$p"; then
				c0=$(pg_cpu_ticks "$dir")
				res=$(runuser -u postgres -- "$bin/pgbench" -h "$dir" -p "$port" -U postgres -N -c 8 -j 2 -T "$secs" postgres 2>/dev/null |
					awk '/^number of transactions actually processed:/ {split($NF, a, "/"); n = a[1]}
						/^tps = .*without initial connection time/ {t = $3}
						END {if (t != "" && n > 0) print "result: tps=" t " tx=" n; else print "result: failed=1"}')
				sleep 0.3 # the backends exit and are reaped
				c1=$(pg_cpu_ticks "$dir")
			fi
			pg_stop "$dir" "$bin"
			if [ -n "$c1" ] && [ "$res" != "result: failed=1" ]; then
				res="$res cpu_us_per_tx=$(awk -v d=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v n="$(echo "$res" | field tx)" \
					'BEGIN {printf "%.1f", d * 1e6 / hz / n}')"
			fi
			echo "$res" >>"$WORK/pg_$p.out"
		done
	done
	pop_cleanup
	local none cnone
	none=$(medall pg_none tps)
	cnone=$(medall pg_none cpu_us_per_tx)
	echo "| configuration | tps | vs none | target | each run | server CPU us per transaction | vs none |"
	echo "|---|---|---|---|---|---|---|"
	for p in none passthrough fdatasync group; do
		local v target=""
		local c
		v=$(medall "pg_$p" tps)
		c=$(medall "pg_$p" cpu_us_per_tx)
		[ "$p" = none ] || target=">= 0.98"
		echo "| $p | $v | $(ratio "$v" "$none") | $target | $(runs "pg_$p" tps) | $c | $(ratio "$c" "$cnone") |"
	done
	grep -q failed "$WORK"/pg_*.out && echo && echo "Some runs failed (counted as missing): $(grep -c failed "$WORK"/pg_*.out | tr '\n' ' ')"
	echo
	echo "Target (issue 11): the durable policies >= 0.98x none."
	echo
}

section_exec() {
	local rounds=${ROUNDS:-5} n=${EXEC_COUNT:-1000} cfgs=(none shim eatmydata) r k
	echo "## Exec of /bin/true with a preloaded library"
	echo
	echo "\`exec_loop -n $n -x /bin/true [-P LIB]\`: posix_spawn + waitpid of /bin/true $n times after 20 untimed ones, the children alone getting \`LD_PRELOAD=LIB\`: none, the shim (libsyncshim.so, no config: passthrough), or Debian's libeatmydata. $rounds rounds, the order rotated each round; medians over the rounds of each run's median spawn-to-reaped time."
	echo
	for ((r = 0; r < rounds; r++)); do
		for ((k = 0; k < ${#cfgs[@]}; k++)); do
			case ${cfgs[(r + k) % ${#cfgs[@]}]} in
			none) run_cfg ex_none "$EX/exec_loop" -n "$n" ;;
			shim) run_cfg ex_shim "$EX/exec_loop" -n "$n" -P "$SHIM" ;;
			eatmydata)
				if [ -n "$EATMYDATA" ]; then run_cfg ex_eatmydata "$EX/exec_loop" -n "$n" -P "$EATMYDATA"; fi ;;
			esac
		done
	done
	local base bmean
	base=$(medall ex_none us_per_exec); bmean=$(medall ex_none mean_us)
	echo "| children run with | us per exec (median) | added us | exec rate vs none | mean us | target |"
	echo "|---|---|---|---|---|---|"
	for c in none shim eatmydata; do
		[ -s "$WORK/ex_$c.out" ] || continue
		local v m added target=""
		v=$(medall "ex_$c" us_per_exec); m=$(medall "ex_$c" mean_us)
		added=$(awk -v a="$v" -v b="$base" 'BEGIN {printf "%+.1f", a - b}')
		[ "$c" = shim ] && target="<= +200 us"
		echo "| $c | $v | $added | $(ratio "$base" "$v") | $m | $target |"
	done
	echo
	echo "Target (issue 11): the preloaded shim adds <= 0.2 ms to an exec of /bin/true."
	echo
}

# window_stats RETURNS RECLOG SECONDS: from the app's sync return times
# (sync_writes -R) and the real syncs recorded beneath the shim
# (reclayer), for each return the time until the end of the first real
# sync that began after it; prints a result line.
window_stats() {
	python3 - "$@" <<'PY'
import bisect, sys
returns = []
with open(sys.argv[1]) as f:
    for line in f:
        if not line.startswith("#"):
            returns.append(int(line))
returns.sort()
syncs = []
with open(sys.argv[2]) as f:
    for line in f:
        kv = dict(x.split("=", 1) for x in line.split(" path=")[0].split() if "=" in x)
        if kv.get("op") in ("fsync", "fdatasync") and kv.get("ret") == "0":
            syncs.append((int(kv["t0"]), int(kv["t1"])))
syncs.sort()
t0s = [s[0] for s in syncs]
w, uncovered = [], 0
for r in returns:
    i = bisect.bisect_left(t0s, r)
    if i == len(syncs):
        uncovered += 1
    else:
        w.append(syncs[i][1] - r)
w.sort()
def pct(p):
    if not w:
        return float("nan")
    k = max(0, min(len(w) - 1, int(-(-p * len(w) // 100)) - 1))
    return w[k] / 1e6
secs = float(sys.argv[3])
print("result: window_p50_ms=%.3f window_p99_ms=%.3f window_max_ms=%.3f real_syncs=%d real_syncs_per_sec=%.1f uncovered=%d"
      % (pct(50), pct(99), (w[-1] / 1e6 if w else float("nan")), len(syncs), len(syncs) / secs if secs > 0 else 0, uncovered))
PY
}

section_window() {
	local rounds=${ROUNDS:-3} secs=${WINDOW_SECONDS:-2} cfgs="1 10 100" c r
	echo "## Defer's window: fixed max_delay_ms against auto"
	echo
	mkdir -p "$WORK/win"
	for c in 1 10 100 auto; do
		{
			printf '[rule win]\npath = %s/win/**\nsync = defer\nmax_calls = 1000000000\nmax_bytes = 1024G\n' "$WORK"
			if [ "$c" = auto ]; then printf 'max_delay_ms = auto\nmax_at_risk_ms = 100\n'; else printf 'max_delay_ms = %s\n' "$c"; fi
		} >"$WORK/win-$c.ini"
	done
	local auto_note="\`max_delay_ms = auto\` is not in this build (\`syncshim check\` refuses it: $("$RUN" check "$WORK/win-auto.ini" 2>&1 | head -n 1 | sed 's/.*win-auto\.ini:[0-9]*: //' || true)); only the fixed windows ran."
	if "$RUN" check "$WORK/win-auto.ini" >/dev/null 2>&1; then
		cfgs="$cfgs auto"
		auto_note="\`auto\` is \`max_delay_ms = auto\` with \`max_at_risk_ms = 100\`."
	fi
	echo "\`sync_writes -s 4096 -t $secs\` (4 KiB append + fsync, one thread, file on /tmp's file system) under a defer rule with \`max_delay_ms\` = 1, 10, 100 ms and auto (\`max_calls\` and \`max_bytes\` set out of reach, so the window alone decides); $rounds rounds interleaved; medians. The window is measured outside the shim: the program writes down when each fsync returned (\`sync_writes -R\`), and tests/lib/reclayer.so, preloaded beneath the shim (\`RECLAYER_OPS=fsync,fdatasync\`: nothing else recorded), writes down when each real sync began and ended; an acknowledged write's window is the time from its fsync returning to the end of the first real sync that began after that. The recorder costs a statx and one write(2) per real sync, and two vDSO clock reads per write. $auto_note"
	echo
	for ((r = 1; r <= rounds; r++)); do
		for c in $cfgs; do
			rm -f "$WORK"/win-rec.log "$WORK"/win-ret.txt
			if LD_PRELOAD="$SHIM:$RECLAYER" SYNCSHIM_CONFIG="$WORK/win-$c.ini" RECLAYER_LOG="$WORK/win-rec.log" \
				RECLAYER_OPS=fsync,fdatasync "$EX/sync_writes" -t "$secs" -n 100000000 -f "$WORK/win/w.dat" \
				-R "$WORK/win-ret.txt" 2>/dev/null | grep '^result:' >"$WORK/win-res.txt"; then
				{
					cat "$WORK/win-res.txt"
					window_stats "$WORK/win-ret.txt" "$WORK/win-rec.log" "$(field seconds <"$WORK/win-res.txt")"
				} | tr '\n' ' ' >>"$WORK/win_$c.out"
				echo >>"$WORK/win_$c.out"
			else
				echo "result: failed=1" >>"$WORK/win_$c.out"
			fi
		done
	done
	local base
	base=$(medall win_100 writes_per_sec)
	echo "| max_delay_ms | writes/s | vs 100 ms | real syncs/s | window p50 (ms) | window p99 (ms) | window max (ms) | app fsync p99 (us) |"
	echo "|---|---|---|---|---|---|---|---|"
	for c in $cfgs; do
		local v
		v=$(medall "win_$c" writes_per_sec)
		echo "| $c | $v | $(ratio "$v" "$base") | $(medall "win_$c" real_syncs_per_sec) | $(medall "win_$c" window_p50_ms) | $(medall "win_$c" window_p99_ms) | $(medall "win_$c" window_max_ms) | $(medall "win_$c" sync_p99_us) |"
	done
	echo
	echo "Target (issue 11): auto keeps the window near one sync's duration at no loss of throughput against the fixed windows, growing toward max_at_risk_ms only under load."
	echo
}

# many_stats RETURNS RECLOG RESULT: each file's request (many_files -R:
# inode, call, return) against the real syncs recorded beneath the shim:
# how long after the last request the last real sync ended, and each
# file's window (its fsync's return to the end of the first real sync
# begun after the call); prints a result line.
many_stats() {
	python3 - "$@" <<'PY'
import sys
calls, rets = {}, {}
with open(sys.argv[1]) as f:
    for line in f:
        ino, c, r = (int(x) for x in line.split())
        calls[ino], rets[ino] = c, r
last = max(rets.values())
end, first = 0, {}
with open(sys.argv[2]) as f:
    for line in f:
        kv = dict(x.split("=", 1) for x in line.split(" path=")[0].split() if "=" in x)
        if kv.get("op") not in ("fsync", "fdatasync"):
            continue
        t0, t1, ino = int(kv["t0"]), int(kv["t1"]), int(kv.get("ino", -1))
        end = max(end, t1)
        if kv.get("ret") == "0" and ino in calls and t0 >= calls[ino] and (ino not in first or t1 < first[ino]):
            first[ino] = t1
w = sorted((first[i] - rets[i]) / 1e6 for i in first) or [float("nan")]
print("result: last_sync_after_ms=%.1f window_p50_ms=%.1f window_p99_ms=%.1f window_max_ms=%.1f uncovered=%d"
      % ((end - last) / 1e6, w[len(w) // 2], w[min(len(w) - 1, int(len(w) * 0.99))], w[-1], len(calls) - len(first)))
PY
}

section_manyfiles() {
	local rounds=${ROUNDS:-2} fss=${MANY_FS:-tmp shm} base=${MANY_BASELINE:-} r fs cfg shim
	local cfgs=${MANY_CFGS:-10000:open 19000:open 100000:close}
	echo "## Many deferred files: the flushers' schedule"
	echo
	echo "\`many_files -n N\` creates N files, each written once (512 bytes) and fsynced once, all kept open (\`open\`) or each closed right after its fsync (\`close\`), under a defer rule with \`max_delay_ms = 100\` (\`max_calls\`/\`max_bytes\` out of reach), then waits 2 s. The real syncs are recorded beneath the shim (tests/lib/reclayer.so, \`RECLAYER_OPS=fsync,fdatasync\`), the program writes down when each fsync was called and returned (\`-R\`); *last sync after* is the end of the last real sync minus the return of the last fsync (the target: within max_delay_ms plus 50 ms for 10,000 files, 200 ms for 19,000 open and 100,000 closed); a file's window is its fsync's return to the end of the first real sync begun after the call. The descriptor limit is $(ulimit -Hn) (hard). *fds* is the most descriptors the process held (sampled every 1,000 files and while waiting), *flushers* the most syncshim-flush threads at once, *shim KiB* the process's peak RSS less that of the same run without the shim. \`tmp\` is /tmp's file system (real syncs), \`shm\` /dev/shm (tmpfs: a sync costs nothing, what is left is the shim's own). ${base:+\`old\` is the shim of $base, run side by side.} $rounds rounds interleaved; medians."
	echo
	local shmdir
	shmdir=$(mktemp -d /dev/shm/syncshim-many.XXXXXX)
	push_cleanup "rm -rf '$shmdir'"
	for fs in $fss; do
		local d=$WORK/many-tmp
		[ "$fs" = shm ] && d=$shmdir
		printf '[rule many]\npath = %s/d/**\nsync = defer\nmax_delay_ms = 100\nmax_calls = 1000000000\nmax_bytes = 1024G\n' "$d" >"$WORK/many-$fs.ini"
		echo "$d" >"$WORK/many-$fs.dir"
	done
	local shms="new"
	[ -n "$base" ] && shms="old new"
	for ((r = 1; r <= rounds; r++)); do
		for fs in $fss; do
			for cfg in $cfgs; do
				local n=${cfg%%:*} mode=${cfg#*:} dir
				# The run without the shim (each fsync real and synchronous)
				# is only for the memory baseline: on tmpfs, where it is quick.
				local withs=$shms
				[ "$fs" = shm ] && withs="none $shms"
				# The old shim's quadratic schedule takes minutes beyond this.
				[ "$n" -gt "${MANY_OLD_MAX:-20000}" ] && withs=${withs/old /}
				for shim in $withs; do
					dir=$(cat "$WORK/many-$fs.dir")/d
					rm -rf "$dir"
					mkdir -p "$dir"
					local pre="" name="many_${fs}_${n}_${mode}_$shim"
					case $shim in
					new) pre="$SHIM:$RECLAYER" ;;
					old) pre="$base/libsyncshim.so:$RECLAYER" ;;
					none) pre="$RECLAYER" ;;
					esac
					rm -f "$WORK/many-rec.log" "$WORK/many-ret.txt"
					if LD_PRELOAD="$pre" SYNCSHIM_CONFIG="$WORK/many-$fs.ini" RECLAYER_LOG="$WORK/many-rec.log" \
						RECLAYER_OPS=fsync,fdatasync "$EX/many_files" -d "$dir" -n "$n" \
						$([ "$mode" = close ] && echo -c) -w 2000 -R "$WORK/many-ret.txt" 2>/dev/null |
						grep '^result:' >"$WORK/many-res.txt"; then
						{
							cat "$WORK/many-res.txt"
							many_stats "$WORK/many-ret.txt" "$WORK/many-rec.log"
						} | tr '\n' ' ' >>"$WORK/$name.out"
						echo >>"$WORK/$name.out"
					else
						echo "result: failed=1" >>"$WORK/$name.out"
					fi
					rm -rf "$dir"
				done
			done
		done
	done
	echo "| fs | files | after fsync | shim | last sync after (ms) | window p50 (ms) | window p99 (ms) | window max (ms) | uncovered | requests (s) | fds | flushers | shim KiB |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for fs in $fss; do
		for cfg in $cfgs; do
			local n=${cfg%%:*} mode=${cfg#*:} none_hwm
			none_hwm=nan
			[ -f "$WORK/many_shm_${n}_${mode}_none.out" ] && none_hwm=$(medall "many_shm_${n}_${mode}_none" hwm_kb)
			for shim in $shms; do
				local name="many_${fs}_${n}_${mode}_$shim" hwm
				[ -f "$WORK/$name.out" ] || continue
				hwm=$(medall "$name" hwm_kb)
				echo "| $fs | $n | $mode | $shim | $(medall "$name" last_sync_after_ms) | $(medall "$name" window_p50_ms) | $(medall "$name" window_p99_ms) | $(medall "$name" window_max_ms) | $(medall "$name" uncovered) | $(medall "$name" requests_s) | $(medall "$name" fds_max) | $(medall "$name" flushers_max) | $(awk -v a="$hwm" -v b="$none_hwm" 'BEGIN {if (b == "nan") print "n/a"; else printf "%.0f", a - b}') |"
			done
		done
	done
	echo
	echo "On \`tmp\` the real syncs are the disk's: when the program asks for them faster than the disk makes them (16 flushers at once), the backlog at the end is the disk's, whatever the schedule; \`shm\` shows what the shim itself adds. *requests (s)* is how long the program took to make its N requests."
	echo
	pop_cleanup
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
	crash_many_files
}

# The rollback of many small files: a shell makes CT_FILES files of one
# line each under noop (nothing synced, so every creation and write is
# undone); one crashtest trial that runs to completion. The rollback's
# time is the trial's wall time less the program's own run.
crash_many_files() {
	local rounds=${ROUNDS:-3} files=${CT_FILES:-20000} dir=$WORK/ctmany r t0 t1 out
	echo "### Rolling back $files small files"
	echo
	echo "\`syncshim crashtest -n 1 -p noop --cut after-ms:600000\` of a shell loop writing $files one-line files (nothing synced: $files CREATE and $files WRITE records undone); $rounds rounds; the rollback's time is the trial's wall time less the program's run (\`end_ms\` in --json) and the launcher's start."
	echo
	for ((r = 1; r <= rounds; r++)); do
		rm -rf "$dir"
		mkdir -p "$dir/files"
		t0=$(date +%s%N)
		out=$("$RUN" crashtest -n 1 -p noop --cut after-ms:600000 --timeout 3600 --scope "$dir/files/**" --json -- \
			sh -c "cd '$dir/files' && i=0; while [ \$i -lt $files ]; do echo x >f\$i; i=\$((i + 1)); done" 2>/dev/null) || true
		t1=$(date +%s%N)
		echo "$out" | awk -v t0="$t0" -v t1="$t1" 'match($0, /"end_ms":[0-9.]+/) {
			run = substr($0, RSTART + 9, RLENGTH - 9); rec = 0
			if (match($0, /"records":[0-9]+/)) rec = substr($0, RSTART + 10, RLENGTH - 10)
			printf "result: rollback_ms=%.0f run_ms=%.0f records=%d\n", (t1 - t0) / 1e6 - run, run, rec }' >>"$WORK/ct_many.out"
	done
	rm -rf "$dir"
	echo "| files | records rolled back | rollback, ms (median) | each run | program's run, ms |"
	echo "|---|---|---|---|---|"
	echo "| $files | $(medall ct_many records) | $(medall ct_many rollback_ms) | $(runs ct_many rollback_ms) | $(medall ct_many run_ms) |"
	echo
	echo "The rollback groups the log's records by file once; it was files x records (22,000 files: about 10 minutes, issue 18)."
	echo
}

# Waits the order cost, per second of a run: the sum over the stats lines
# (SYNCSHIM_TEST_ORDER_STATS: one per process of the run, at its exit) of
# the waits for other files' syncs and for the file's own.
order_waits() { # order_waits STATSFILE SECONDS
	awk -v s="$2" '/^order:/ {for (i = 1; i <= NF; i++) {split($i, kv, "="); if (kv[1] == "waits_other" || kv[1] == "waits_self") w += kv[2]; if (kv[1] == "checks_asked") c += kv[2]}}
		END {printf "order_waits_per_sec=%.1f order_checks=%d", w / s, c}' "$1" 2>/dev/null || echo "order_waits_per_sec=nan"
}

# One redis-server under defer (ordering on or off: $1 = SYNCSHIM_TEST_NO_ORDER),
# appendfsync always, on a random loopback port; redis-benchmark's SET rate.
ordered_redis_run() {
	local off=$1 port dir pid rps t0 t1
	port=$((20000 + RANDOM % 20000))
	dir=$WORK/redis.$off
	rm -rf "$dir" && mkdir -p "$dir"
	SYNCSHIM_TEST_NO_ORDER=$off SYNCSHIM_TEST_ORDER_STATS=$dir/ost "$RUN" run -p defer -- redis-server --port "$port" --bind 127.0.0.1 \
		--dir "$dir" --appendonly yes --appendfsync always --save '' --daemonize no >"$dir/log" 2>&1 &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	t0=$(date +%s.%N)
	rps=$(redis-benchmark -p "$port" -t set -n "${ORDER_REDIS_N:-50000}" -c 1 -q 2>/dev/null | tr '\r' '\n' |
		sed -n 's/^SET: *\([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
	t1=$(date +%s.%N)
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo "result: sets_per_sec=${rps:-nan} $(order_waits "$dir/ost" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")" >>"$WORK/ord_redis_$off.out"
}

# sqlite3 in WAL mode (examples/sqlite/insert_wal.sh), $2 rows, under
# defer (ordering on or off) or passthrough (pt): rows committed per
# second, real syncs per second (all of them, recorded beneath the shim:
# the deadline's, and under ordering the ones the waits asked for), and
# the order's waits (the sqlite3 process ends normally: its count is
# written at exit).
# The services section runs it with no shim (none), under libeatmydata
# (emd) and under SVC_BASELINE's shim (base) too, its results under the
# name NAME.
ordered_sqlite_run() { # ordered_sqlite_run 0|1|pt|none|emd|base ROWS [NAME]
	local off=$1 nrows=$2 name=${3:-ord_sq_$1} dir rows waits t0 t1 secs
	dir=$WORK/sq.$off
	rm -rf "$dir" && mkdir -p "$dir"
	sqlite3 "$dir/db" 'PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB NOT NULL)' >/dev/null
	local pol=defer pre=$SHIM:$RECLAYER
	case $off in
	pt) pol=passthrough ;;
	none) pre=$RECLAYER ;;
	emd) pre=$EATMYDATA:$RECLAYER ;;
	base) pre=$SVC_BASELINE/libsyncshim.so:$RECLAYER ;;
	esac
	t0=$(date +%s.%N)
	SYNCSHIM_TEST_NO_ORDER=$off RECLAYER_LOG="$dir/rec" RECLAYER_OPS=fsync,fdatasync \
		SYNCSHIM_TEST_ORDER_STATS=$dir/ost LD_PRELOAD="$pre" SYNCSHIM_POLICY=$pol \
		timeout 120 "$B/../examples/sqlite/insert_wal.sh" "$dir/db" "$dir/acks" "$nrows" >/dev/null 2>&1 || true
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
	rows=$(sqlite3 "$dir/db" 'SELECT count(*) FROM t')
	waits=$(wc -l <"$dir/rec" 2>/dev/null || echo 0)
	echo "result: rows_per_sec=$(awk -v r="$rows" -v s="$secs" 'BEGIN {printf "%.1f", r / s}') waits_per_sec=$(awk -v w="$waits" -v s="$secs" 'BEGIN {printf "%.1f", w / s}') $(order_waits "$dir/ost" "$secs")" >>"$WORK/$name.out"
}

# KahaDB's DiskBenchmark under defer, ordering on or off: its "Sync Writes"
# phase (seek, 4 KiB write, FileChannel.force, over a preallocated file
# rewritten from its start again and again with the same bytes).
ordered_kahadb_run() {
	local off=$1 cp=/usr/share/java dir res
	local jars="$cp/activemq-kahadb-store.jar:$cp/activemq-client.jar:$cp/hawtbuf.jar:$cp/geronimo-jms_1.1_spec.jar:$cp/slf4j-api.jar:$cp/slf4j-nop.jar"
	dir=$WORK/kd.$off
	rm -rf "$dir" && mkdir -p "$dir"
	res=$(cd "$dir" && SYNCSHIM_TEST_NO_ORDER=$off SYNCSHIM_TEST_ORDER_STATS=$dir/ost "$RUN" run -p defer -- \
		java -cp "$jars" org.apache.activemq.store.kahadb.disk.util.DiskBenchmark --bs=4096 --size=20000000 \
		--sample-interval=2000 2>/dev/null |
		awk '/^Sync Writes:/ {s=1} s && /writes\/second/ {print "result: sync_writes_per_sec=" $1; exit}')
	echo "${res:-result: failed=1} $(order_waits "$dir/ost" 6)" >>"$WORK/ord_kd_$off.out"
}

# A standalone ZooKeeper server (Debian's zookeeper) under defer, ordering
# on or off, forceSync on (its default): examples/zookeeper/ZkWrites with 4
# sessions doing synchronous setData for $2 seconds.
ordered_zk_run() {
	local off=$1 secs=$2 dir port pid res cls=$WORK/zk-classes
	dir=$WORK/zk.$off
	port=$((20000 + RANDOM % 20000))
	rm -rf "$dir" && mkdir -p "$dir/data"
	SYNCSHIM_TEST_NO_ORDER=$off SYNCSHIM_TEST_ORDER_STATS=$dir/ost "$RUN" run -p defer -- \
		java -Dzookeeper.admin.enableServer=false -cp /usr/share/java/zookeeper.jar \
		org.apache.zookeeper.server.ZooKeeperServerMain "$port" "$dir/data" >"$dir/log" 2>&1 &
	pid=$!
	for ((i = 0; i < 150; i++)); do
		timeout 1 bash -c "echo >/dev/tcp/127.0.0.1/$port" 2>/dev/null && break
		sleep 0.2
	done
	res=$(java -cp "/usr/share/java/zookeeper.jar:$cls" ZkWrites "127.0.0.1:$port" "$secs" 4 2>/dev/null | grep '^result:')
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo "${res:-result: failed=1} $(order_waits "$dir/ost" "$secs")" >>"$WORK/ord_zk_$off.out"
}

# PostgreSQL (the postmaster and every backend under the configuration:
# defer with ordering on or off, or passthrough), pgbench tpcb-like, 4
# clients, $2 seconds; tps and the order's waits per second.
ordered_pg_run() {
	local off=$1 secs=$2 dir=$WORK/opg bin=$3 port=$4 res pol=defer
	[ "$off" = pt ] && pol=passthrough
	rm -f "$dir/ost"
	runuser -u postgres -- env SYNCSHIM_TEST_NO_ORDER=$off SYNCSHIM_TEST_ORDER_STATS="$dir/ost" \
		"$RUN" run -p "$pol" -- "$bin/postgres" -D "$dir/data" -k "$dir" -p "$port" \
		-c listen_addresses= >>"$dir/server.log" 2>&1 &
	echo $! >"$dir/starter.pid"
	local i up=0
	for ((i = 0; i < 300; i++)); do
		"$bin/pg_isready" -q -h "$dir" -p "$port" && { up=1; break; }
		kill -0 "$(cat "$dir/starter.pid")" 2>/dev/null || break
		sleep 0.1
	done
	res="result: failed=1"
	if [ "$up" = 1 ]; then
		res=$(runuser -u postgres -- "$bin/pgbench" -h "$dir" -p "$port" -U postgres -c 4 -j 2 -T "$secs" postgres 2>/dev/null |
			awk '/^tps = .*without initial connection time/ {t = $3} END {if (t != "") print "result: tps=" t; else print "result: failed=1"}')
	fi
	pg_stop "$dir" "$bin"
	echo "$res $(order_waits "$dir/ost" "$secs")" >>"$WORK/ord_pg_$off.out"
}

ordered_pg_setup() { # ordered_pg_setup BIN PORT [DIR]: a throwaway cluster in DIR (default $WORK/opg), pgbench -i; 0 if ready
	local bin=$1 port=$2 dir=${3:-$WORK/opg}
	chmod 711 "$WORK"
	mkdir -p "$dir"
	chown postgres: "$dir"
	push_cleanup "pg_stop '$dir' '$bin'"
	runuser -u postgres -- "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync >"$dir/initdb.log" 2>&1 || return 1
	pg_start "$dir" "$bin" "$port" none || return 1
	runuser -u postgres -- "$bin/pgbench" -h "$dir" -p "$port" -U postgres -i -q postgres >"$dir/init.log" 2>&1 || return 1
	pg_stop "$dir" "$bin"
}

section_ordered() {
	local rounds=${ROUNDS:-5} secs=${ORDER_SECONDS:-3} pgsecs=${ORDER_PG_SECONDS:-10} sqrows=${ORDER_SQLITE_ROWS:-1000} off
	local have_redis=0 have_kd=0 have_zk=0 have_pg=0 pgbin pgport=$((20000 + RANDOM % 20000))
	command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && have_redis=1
	[ -f /usr/share/java/activemq-kahadb-store.jar ] && command -v java >/dev/null && have_kd=1
	if [ -f /usr/share/java/zookeeper.jar ] && command -v javac >/dev/null; then
		mkdir -p "$WORK/zk-classes"
		javac -cp /usr/share/java/zookeeper.jar -d "$WORK/zk-classes" "$B/../examples/zookeeper/ZkWrites.java" 2>/dev/null && have_zk=1
	fi
	pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -n "$pgbin" ] && id postgres >/dev/null 2>&1 && ordered_pg_setup "$pgbin" "$pgport"; then
		have_pg=1
	fi
	echo "## Ordered defer: what keeping the order costs (issue 18)"
	echo
	echo "Today's defer with ordering turned off (\`SYNCSHIM_TEST_NO_ORDER=1\`, a test hook: each file's deferred syncs kept alone, as before ordered defer) against ordered defer, side by side, $rounds rounds interleaved (off on off on ...), medians. \`sync_writes -s 4096 -t $secs\`: one file, 4 KiB \`write\` at the position + fsync; \`sync_writes\` again with \`-T 2\` (two threads, \`pwrite\` at reserved offsets); Redis 7 with \`appendonly yes\`, \`appendfsync always\` under \`syncshim run -p defer\`, \`redis-benchmark -t set -c 1\` over loopback (the AOF is one file written with \`O_APPEND\`); KahaDB's DiskBenchmark (\`--bs=4096 --size=20000000 --sample-interval=2000\`, its Sync Writes phase: seek + 4 KiB write + \`FileChannel.force\` over a preallocated file it rewrites from the start with the same bytes); ZooKeeper 3.8 standalone (\`ZooKeeperServerMain\`, forceSync on) with \`examples/zookeeper/ZkWrites\` (4 sessions of synchronous 512-byte \`setData\` for $secs s); sqlite3 in WAL mode (\`examples/sqlite/insert_wal.sh\`: one process, \`synchronous=FULL\`, one INSERT per commit, a checkpoint every 20 WAL pages) inserting $sqrows rows, rows committed per second and real syncs per second (every fsync/fdatasync the shim made, recorded beneath it by tests/lib/reclayer.so with \`RECLAYER_OPS=fsync,fdatasync\`); PostgreSQL $( [ -n "$pgbin" ] && "$pgbin/postgres" --version | sed 's/.*) //') with \`pgbench -c 4 -j 2 -T $pgsecs\` (tpcb-like, scale 1; the postmaster and every backend under the shim). sqlite and PostgreSQL also under passthrough. *waits/s*: the waits the order cost (writes and changes that waited for another file's acknowledged syncs or for their own file's), counted by the shim in every process of the run (\`SYNCSHIM_TEST_ORDER_STATS\`) and divided by the run's seconds. Files on /tmp's file system."
	echo
	for ((r = 1; r <= rounds; r++)); do
		for off in 1 0; do
			run_cfg "ord_sw_$off" env SYNCSHIM_TEST_NO_ORDER=$off "$RUN" run -p defer -- \
				"$EX/sync_writes" -t "$secs" -n 100000000 -f "$WORK/ord.dat"
			run_cfg "ord_sw2_$off" env SYNCSHIM_TEST_NO_ORDER=$off "$RUN" run -p defer -- \
				"$EX/sync_writes" -T 2 -t "$secs" -n 100000000 -f "$WORK/ord.dat"
			[ "$have_redis" = 1 ] && ordered_redis_run "$off"
			[ "$have_kd" = 1 ] && ordered_kahadb_run "$off"
			[ "$have_zk" = 1 ] && ordered_zk_run "$off" "$secs"
			ordered_sqlite_run "$off" "$sqrows"
			[ "$have_pg" = 1 ] && ordered_pg_run "$off" "$pgsecs" "$pgbin" "$pgport"
		done
		ordered_sqlite_run pt "$sqrows"
		[ "$have_pg" = 1 ] && ordered_pg_run pt "$pgsecs" "$pgbin" "$pgport"
	done
	[ "$have_pg" = 1 ] && pop_cleanup
	echo "| workload | defer, unordered | ordered defer | ordered / unordered | ordered: waits/s | runs (unordered; ordered) | target |"
	echo "|---|---|---|---|---|---|---|"
	local u o
	ord_row() { # ord_row LABEL NAME FIELD TARGET
		u=$(medall "$2_1" "$3"); o=$(medall "$2_0" "$3")
		local w
		w=$(medall "$2_0" order_waits_per_sec)
		[ "$w" = nan ] && w="-"
		echo "| $1 | $u | $o | $(ratio "$o" "$u") | $w | $(runs "$2_1" "$3"); $(runs "$2_0" "$3") | $4 |"
	}
	ord_row "sync_writes (append loop: \`write\` + fsync), writes/s" ord_sw writes_per_sec ">= 0.95"
	ord_row "sync_writes -T 2 (\`pwrite\` + fsync), writes/s" ord_sw2 writes_per_sec ">= 0.95"
	[ "$have_redis" = 1 ] && ord_row "Redis AOF always, SET/s" ord_redis sets_per_sec ">= 0.95"
	[ "$have_kd" = 1 ] && ord_row "KahaDB DiskBenchmark sync writes/s" ord_kd sync_writes_per_sec ">= 0.95"
	if [ "$have_zk" = 1 ]; then
		ord_row "ZooKeeper setData/s (4 sessions)" ord_zk writes_per_sec ">= 0.95"
	else
		echo "| ZooKeeper | not run: Debian's zookeeper is not installed (\`make bench-deps\`) | | | | | >= 0.95 |"
	fi
	ord_row "sqlite WAL, rows/s" ord_sq rows_per_sec "measured"
	echo "| sqlite WAL, real syncs/s | $(medall ord_sq_1 waits_per_sec) | $(medall ord_sq_0 waits_per_sec) | | | $(runs ord_sq_1 waits_per_sec); $(runs ord_sq_0 waits_per_sec) | |"
	[ "$have_pg" = 1 ] && ord_row "PostgreSQL pgbench tpcb-like, tps" ord_pg tps "measured"
	echo
	local p
	p=$(medall ord_sq_pt rows_per_sec)
	echo "| against passthrough | passthrough | ordered defer | ordered / passthrough | unordered / passthrough |"
	echo "|---|---|---|---|---|"
	echo "| sqlite WAL, rows/s | $p | $(medall ord_sq_0 rows_per_sec) | $(ratio "$(medall ord_sq_0 rows_per_sec)" "$p") | $(ratio "$(medall ord_sq_1 rows_per_sec)" "$p") |"
	if [ "$have_pg" = 1 ]; then
		p=$(medall ord_pg_pt tps)
		echo "| PostgreSQL tps | $p | $(medall ord_pg_0 tps) | $(ratio "$(medall ord_pg_0 tps)" "$p") | $(ratio "$(medall ord_pg_1 tps)" "$p") |"
	fi
	grep -q failed "$WORK"/ord_*.out 2>/dev/null && echo && echo "Some runs failed (counted as missing): $(grep -c failed "$WORK"/ord_*.out | tr '\n' ' ')"
	echo
}
# ---- services: real servers under each wrapper, and the apps' own knobs ----

# svc_pre CONFIG STATS: sets PRE, the wrapper a service alone runs under:
# none (nothing; also the knob rows, which change the app's settings
# instead), libeatmydata (emd), `syncshim run -p defer` with the order
# kept (defer) or turned off by the test hook (nord,
# SYNCSHIM_TEST_NO_ORDER=1), or the defer of another build (base:
# SVC_BASELINE's syncshim, say main's before a change); under the shim
# every process of the service appends its order counts to STATS at its
# exit.
svc_pre() {
	case $1 in
	none | knob*) PRE=() ;;
	emd) PRE=(eatmydata) ;;
	defer) PRE=(env SYNCSHIM_TEST_NO_ORDER=0 SYNCSHIM_TEST_ORDER_STATS="$2" "$RUN" run -p defer --) ;;
	nord) PRE=(env SYNCSHIM_TEST_NO_ORDER=1 SYNCSHIM_TEST_ORDER_STATS="$2" "$RUN" run -p defer --) ;;
	base) PRE=(env SYNCSHIM_TEST_ORDER_STATS="$2" "$SVC_BASELINE/syncshim" run -p defer --) ;;
	*) echo "bench.sh: unknown services configuration $1" >&2; return 1 ;;
	esac
}

svc_port() { # a port on 127.0.0.1 nothing listens on
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 12000))
		ss -Htln "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
	done
	echo "$p"
}

# svc_stop_pid PID: SIGTERM (the service exits normally: the shim's exit
# barrier and counts run), SIGKILL after 60 s. SVC_PID is the service
# running now, which the section's cleanup stops if the run is cut short.
SVC_PID=""
svc_stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	SVC_PID=""
}

svc_fmt() { # a median as the tables show it: whole units, "-" when there is none
	awk -v v="$1" 'BEGIN { if (v == "nan" || v == "") print "-"; else printf "%.0f", v }'
}

svc_rotate() { # svc_rotate K WORD...: the words, starting at the K-th (mod their number)
	local k=$1 i
	shift
	local w=("$@")
	for ((i = 0; i < ${#w[@]}; i++)); do echo "${w[(i + k) % ${#w[@]}]}"; done
}

# The ActiveMQ broker (examples/activemq/broker.sh: KahaDB, a journal sync
# per persistent send; knob: journalDiskSyncStrategy=periodic) alone under
# the configuration; AmqLoad's 8 producers, without any wrapper, for $2
# seconds once all are connected.
svc_amq_run() {
	local cfg=$1 secs=$2 dir=$WORK/amq.$1 port pid res strategy=always
	[ "$cfg" = knob ] && strategy=periodic
	port=$(svc_port)
	rm -rf "$dir"
	"$EXS/activemq/broker.sh" conf "$dir" "$port" "$strategy"
	svc_pre "$cfg" "$dir/ost"
	"${PRE[@]}" "$EXS/activemq/broker.sh" start "$dir" >"$dir/broker.log" 2>&1 &
	pid=$! SVC_PID=$!
	res="result: failed=1"
	if "$EXS/activemq/broker.sh" wait "$port" 120 2>/dev/null; then
		res=$(java -Xmx128m -XX:-UsePerfData -cp "$SVC_AMQ_CP" AmqLoad produce "tcp://127.0.0.1:$port" svc 8 "$secs" \
			2>/dev/null | grep '^result:') || res="result: failed=1"
	fi
	svc_stop_pid "$pid"
	echo "$res $(order_waits "$dir/ost" "$secs")" >>"$WORK/svc_amq_$cfg.out"
}

# MariaDB (examples/mariadb/: a fresh copy of the template's datadir, binlog
# on, sync_binlog=1, innodb_flush_log_at_trx_commit=1; knob: that at 2;
# knob0: 2 and sync_binlog=0), the server alone under the configuration;
# sysbench oltp_insert, 8 threads, $2 seconds. In a subshell: common.sh's
# names stay there.
svc_mdb_run() {
	local cfg=$1 secs=$2 d=$WORK/mdb
	(
		. "$EXS/mariadb/common.sh"
		local extra=() res="result: failed=1"
		case $cfg in
		knob) extra=(--innodb-flush-log-at-trx-commit=2) ;;
		knob0) extra=(--innodb-flush-log-at-trx-commit=2 --sync-binlog=0) ;;
		esac
		svc_pre "$cfg" "$d/ost"
		MDB_PRE=("${PRE[@]}")
		"$EXS/mariadb/setup.sh" restore "$d" >/dev/null 2>&1
		rm -f "$d/ost"
		if mdb_start "$d" "${extra[@]}"; then
			res=$(mdb_sysbench "$d" run --threads=8 --time="$secs" --report-interval=0 2>/dev/null |
				awk '/^ *transactions:/ {gsub(/[()]/, "", $3); print "result: tps=" $3}')
			[ -n "$res" ] || res="result: failed=1"
		fi
		mdb_stop "$d"
		echo "$res $(order_waits "$d/ost" "$secs")" >>"$WORK/svc_mdb_$cfg.out"
	)
}

# PostgreSQL (the cluster ordered_pg_setup made in $WORK/spg; knob:
# synchronous_commit=off), the postmaster and every backend under the
# configuration; pgbench -N, 8 clients, $2 seconds.
svc_pg_run() {
	local cfg=$1 secs=$2 bin=$3 port=$4 dir=$WORK/spg res i up=0 settings=()
	[ "$cfg" = knob ] && settings=(-c synchronous_commit=off)
	svc_pre "$cfg" "$dir/ost"
	rm -f "$dir/ost"
	runuser -u postgres -- "${PRE[@]}" "$bin/postgres" -D "$dir/data" -k "$dir" -p "$port" -c listen_addresses= \
		"${settings[@]}" >>"$dir/server.log" 2>&1 &
	echo $! >"$dir/starter.pid"
	for ((i = 0; i < 300; i++)); do
		"$bin/pg_isready" -q -h "$dir" -p "$port" && { up=1; break; }
		kill -0 "$(cat "$dir/starter.pid")" 2>/dev/null || break
		sleep 0.1
	done
	res="result: failed=1"
	if [ "$up" = 1 ]; then
		res=$(runuser -u postgres -- "$bin/pgbench" -h "$dir" -p "$port" -U postgres -N -c 8 -j 2 -T "$secs" postgres 2>/dev/null |
			awk '/^tps = .*without initial connection time/ {t = $3} END {if (t != "") print "result: tps=" t; else print "result: failed=1"}')
	fi
	pg_stop "$dir" "$bin"
	echo "$res $(order_waits "$dir/ost" "$secs")" >>"$WORK/svc_pg_$cfg.out"
}

# Redis 7 (appendonly yes, appendfsync always; knob: everysec), alone under
# the configuration; redis-benchmark -t set -c 8 -n $2 over loopback.
svc_redis_run() {
	local cfg=$1 n=$2 fsync=always port dir pid rps t0 t1 i
	[ "$cfg" = knob ] && fsync=everysec
	port=$(svc_port)
	dir=$WORK/sredis.$cfg
	rm -rf "$dir" && mkdir -p "$dir"
	svc_pre "$cfg" "$dir/ost"
	"${PRE[@]}" redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --appendonly yes --appendfsync "$fsync" \
		--save '' --daemonize no >"$dir/log" 2>&1 &
	pid=$! SVC_PID=$!
	for ((i = 0; i < 100; i++)); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	t0=$(date +%s.%N)
	rps=$(redis-benchmark -p "$port" -t set -n "$n" -c 8 -q 2>/dev/null | tr '\r' '\n' |
		sed -n 's/^SET: *\([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
	t1=$(date +%s.%N)
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	svc_stop_pid "$pid"
	if [ -n "$rps" ]; then
		echo "result: sets_per_sec=$rps $(order_waits "$dir/ost" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")" >>"$WORK/svc_redis_$cfg.out"
	else
		echo "result: failed=1" >>"$WORK/svc_redis_$cfg.out"
	fi
}

# examples/commit_log: a journal record + fsync per commit, and a line per
# commit on stdout, redirected to a regular file (the same file under
# every configuration); $2 seconds.
svc_log_run() {
	local cfg=$1 secs=$2 dir=$WORK/clog res
	rm -rf "$dir" && mkdir -p "$dir"
	svc_pre "$cfg" "$dir/ost"
	res=$("${PRE[@]}" "$EX/commit_log" -t "$secs" -f "$dir/journal" 2>&1 >"$dir/commits.log" | grep '^result:') ||
		res="result: failed=1"
	echo "$res log_lines=$(wc -l <"$dir/commits.log") $(order_waits "$dir/ost" "$secs")" >>"$WORK/svc_log_$cfg.out"
}

section_services() {
	local rounds=${ROUNDS:-5} secs=${SVC_SECONDS:-4} sqrows=${SVC_SQLITE_ROWS:-3000} redis_n=${SVC_REDIS_N:-20000}
	local lsecs=${SVC_LOG_SECONDS:-2} r cfg load0 t0 base="" cmd services=${SVC_SERVICES:-activemq mariadb postgres sqlite redis log}
	SVC_BASELINE=${SVC_BASELINE:-}
	if [ -n "$SVC_BASELINE" ]; then
		SVC_BASELINE=$(cd "$SVC_BASELINE" && pwd)
		base=base
	fi
	cmd="ROUNDS=$rounds SVC_SECONDS=$secs SVC_SQLITE_ROWS=$sqrows SVC_REDIS_N=$redis_n SVC_LOG_SECONDS=$lsecs${SVC_SERVICES:+ SVC_SERVICES=\"$services\"}${base:+ SVC_BASELINE=$SVC_BASELINE} tools/scripts/bench.sh $B services"
	local have_amq=0 have_mdb=0 have_pg=0 have_redis=0 pgbin pgport=$((20000 + RANDOM % 12000)) mdb_pushed=0 pg_pushed=0
	EXS=$(cd "$B/../examples" && pwd)
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	t0=$(date +%s)
	push_cleanup '[ -z "$SVC_PID" ] || svc_stop_pid "$SVC_PID"'
	svc_want() { [[ " $services " == *" $1 "* ]]; }
	if svc_want activemq && [ -r /usr/share/activemq/bin/activemq.jar ] && command -v javac >/dev/null &&
		SVC_AMQ_CP=$("$EXS/activemq/broker.sh" client "$WORK/amq-classes" 2>/dev/null); then
		have_amq=1
	fi
	# each cleanup pushed here is popped at the end, last first
	if svc_want mariadb && command -v mariadbd >/dev/null && command -v sysbench >/dev/null; then
		mdb_pushed=1
		push_cleanup "( . '$EXS/mariadb/common.sh' && mdb_stop '$WORK/mdb' )"
		"$EXS/mariadb/setup.sh" template "$WORK/mdb" >"$WORK/mdb-setup.log" 2>&1 && have_mdb=1
	fi
	pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if svc_want postgres && [ -n "$pgbin" ] && id postgres >/dev/null 2>&1; then
		pg_pushed=1 # ordered_pg_setup pushes the cluster's stop
		ordered_pg_setup "$pgbin" "$pgport" "$WORK/spg" && have_pg=1
	fi
	svc_want redis && command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && have_redis=1
	echo "## Services under each wrapper, and the apps' own knobs (issues 27, 28 and 30)"
	echo
	echo "Real servers, each alone under a wrapper (its clients run without one): no shim, Debian's libeatmydata, \`syncshim run -p defer\` (ordered defer, as this build keeps the order), and the same with the order turned off by the test hook \`SYNCSHIM_TEST_NO_ORDER=1\` (unordered: defer's speed without the order's waits); and each app's own durability knob, with no shim. $rounds rounds, in each round every service's configurations one after another, their order rotated round by round; medians, and every run's value. *waits/s*: the order's waits (writes and changes that waited for other files' acknowledged syncs, or for their own file's: \`waits_other + waits_self\` of \`SYNCSHIM_TEST_ORDER_STATS\`, summed over the service's processes at their exit) per second of the load. Files on /tmp's file system."
	echo
	echo "- ActiveMQ 5.17 (Debian's broker, \`examples/activemq/broker.sh\`: KahaDB with its defaults, a journal sync per persistent send; JMX and the web console off), 8 producers of persistent 1 KiB messages (\`examples/activemq/AmqLoad.java\`, each its own connection) for $secs s once all are connected; messages/s. Knob: KahaDB's \`journalDiskSyncStrategy=periodic\` (a journal sync a second)."
	echo "- MariaDB $(mariadbd --version 2>/dev/null | sed -n 's/.*Ver \([0-9.]*\)-.*/\1/p') (\`examples/mariadb/\`: a throwaway datadir made by mariadb-install-db, a socket in it, no TCP, never the system's instance; \`--log-bin --binlog-format=ROW --sync-binlog=1 --innodb-flush-log-at-trx-commit=1\`, the rest default: InnoDB writes O_DIRECT), a fresh copy of it per run, \`sysbench oltp_insert --threads=8 --time=$secs\` (4 tables); transactions/s. Knobs: \`innodb_flush_log_at_trx_commit=2\` with the binlog still synced (knob), and with \`sync_binlog=0\` too (knob0)."
	echo "- PostgreSQL $([ -n "$pgbin" ] && "$pgbin/postgres" --version | sed 's/.*) //') (a throwaway cluster, scale 1, default settings), \`pgbench -N -c 8 -j 2 -T $secs\`; tps. Knob: \`synchronous_commit=off\`."
	echo "- sqlite3 in WAL mode, \`synchronous=FULL\`, $sqrows autocommit INSERTs by one process (\`examples/sqlite/insert_wal.sh\`, a checkpoint every 20 WAL pages); rows/s (its process's whole run). Its nearest knob, \`synchronous=NORMAL\` (WAL synced at checkpoints only), is not run."
	echo "- Redis 7, \`appendonly yes\`, \`appendfsync always\`, \`redis-benchmark -t set -c 8 -n $redis_n\` over loopback; SET/s. Knob: \`appendfsync everysec\`."
	echo "- A per-commit human log (\`examples/commit_log\`, issue 28 item 7): a 128-byte journal record + fsync per commit, then one line per commit written to stdout, redirected to a regular file (the same for every configuration); $lsecs s; commits/s."
	echo
	echo "${base:+*baseline*: \`syncshim run -p defer\` of the build in $SVC_BASELINE ($(git -C "$SVC_BASELINE/.." log -1 --format='%h %s' 2>/dev/null | cut -c1-60 || echo '?')), its shim in the same place as this build's, side by side: the one-log rows' target is against it.}"
	echo
	echo "The command: \`$cmd\` (\`make bench SECTIONS=services\` takes the same variables). Load average at the start: $load0."
	echo
	for ((r = 0; r < rounds; r++)); do
		if [ "$have_amq" = 1 ]; then
			for cfg in $(svc_rotate "$r" none emd defer nord $base knob); do svc_amq_run "$cfg" "$secs"; done
		fi
		if [ "$have_mdb" = 1 ]; then
			for cfg in $(svc_rotate "$r" none emd defer nord $base knob knob0); do svc_mdb_run "$cfg" "$secs"; done
		fi
		if [ "$have_pg" = 1 ]; then
			for cfg in $(svc_rotate "$r" none emd defer nord $base knob); do svc_pg_run "$cfg" "$secs" "$pgbin" "$pgport"; done
		fi
		svc_want sqlite && for cfg in $(svc_rotate "$r" none emd defer nord $base); do
			case $cfg in
			none | emd | base) ordered_sqlite_run "$cfg" "$sqrows" "svc_sq_$cfg" ;;
			defer) ordered_sqlite_run 0 "$sqrows" svc_sq_defer ;;
			nord) ordered_sqlite_run 1 "$sqrows" svc_sq_nord ;;
			esac
		done
		if [ "$have_redis" = 1 ]; then
			for cfg in $(svc_rotate "$r" none emd defer nord $base knob); do svc_redis_run "$cfg" "$redis_n"; done
		fi
		svc_want log && for cfg in $(svc_rotate "$r" none emd defer nord $base); do svc_log_run "$cfg" "$lsecs"; done
	done
	[ "$pg_pushed" = 0 ] || pop_cleanup
	[ "$mdb_pushed" = 0 ] || pop_cleanup
	pop_cleanup # the service of the moment
	local bh="" bs=""
	[ -n "$base" ] && bh=" baseline's defer | ordered / baseline | baseline: waits/s |" bs="---|---|---|"
	echo "| service, figure | no shim | eatmydata | defer (ordered) | defer, unordered | ordered / unordered | ordered / no shim | ordered / eatmydata | waits/s: ordered; unordered |$bh every run: no shim; eatmydata; ordered; unordered${base:+; baseline} | target |"
	echo "|---|---|---|---|---|---|---|---|---|$bs---|---|"
	svc_row() { # svc_row LABEL NAME FIELD TARGET
		local n e o u wo wu c b bc=""
		if [ ! -f "$WORK/$2_none.out" ]; then # not run: as many empty cells as the header has, less 3
			echo "| $1 | not run |$(printf ' |%.0s' $(seq 1 $((${base:+3} + 8)))) $4 |"
			return 0
		fi
		n=$(medall "$2_none" "$3"); e=$(medall "$2_emd" "$3"); o=$(medall "$2_defer" "$3"); u=$(medall "$2_nord" "$3")
		wo=$(medall "$2_defer" order_waits_per_sec); wu=$(medall "$2_nord" order_waits_per_sec)
		if [ -n "$base" ]; then
			b=$(medall "$2_base" "$3")
			bc=" $(svc_fmt "$b") | $(ratio "$o" "$b") | $(svc_fmt "$(medall "$2_base" order_waits_per_sec)") |"
		fi
		echo "| $1 | $(svc_fmt "$n") | $(svc_fmt "$e") | $(svc_fmt "$o") | $(svc_fmt "$u") | $(ratio "$o" "$u") | $(ratio "$o" "$n") |" \
			"$(ratio "$o" "$e") | $(svc_fmt "$wo"); $(svc_fmt "$wu") |$bc" \
			"$(for c in none emd defer nord $base; do runs "$2_$c" "$3"; echo -n "; "; done | sed 's/; $//') | $4 |"
	}
	svc_row "ActiveMQ, persistent msgs/s (8 producers)" svc_amq msgs_per_sec "ordered / unordered >= 0.9 (issue 27)"
	svc_row "MariaDB sysbench oltp_insert, trx/s (8 threads)" svc_mdb tps "ordered / unordered >= 0.9 (issue 27)"
	svc_row "PostgreSQL pgbench -N, tps (8 clients)" svc_pg tps "ordered / unordered >= 0.9 (issue 27)"
	svc_row "sqlite3 WAL FULL, rows/s" svc_sq rows_per_sec "ordered / unordered >= 0.9 (issue 27)"
	svc_row "Redis AOF always, SET/s (8 clients)" svc_redis sets_per_sec "one log: ordered >= 0.95 of today's defer${base:+ (the baseline)} (issue 27)"
	svc_row "journal + a stdout line per commit, commits/s" svc_log commits_per_sec "ordered / eatmydata >= 0.8 (issue 28)"
	echo
	echo "The apps' own knobs, with no shim, against the durable setting under ordered defer (the same runs as above): what each gives up is its loss window, as the app's documentation states it, against defer's (\`max_delay_ms\`, 100 ms by default, plus the one real sync that closes it)."
	echo
	echo "| service | the app's knob, no shim | its loss window (stated) | durable setting, no shim | durable setting under ordered defer | defer / knob | runs: knob; ordered defer |"
	echo "|---|---|---|---|---|---|---|"
	knob_row() { # knob_row SERVICE KNOB WINDOW NAME FIELD [KNOBNAME]
		local k=${6:-knob} kv o n
		[ -f "$WORK/$4_$k.out" ] || return 0
		kv=$(medall "$4_$k" "$5"); o=$(medall "$4_defer" "$5"); n=$(medall "$4_none" "$5")
		echo "| $1 | $2: $(svc_fmt "$kv") | $3 | $(svc_fmt "$n") | $(svc_fmt "$o") | $(ratio "$o" "$kv") | $(runs "$4_$k" "$5"); $(runs "$4_defer" "$5") |"
	}
	knob_row "ActiveMQ msgs/s" "KahaDB \`journalDiskSyncStrategy=periodic\`" "up to \`journalDiskSyncInterval\`, 1 s by default" svc_amq msgs_per_sec
	knob_row "MariaDB trx/s" "\`innodb_flush_log_at_trx_commit=2\`, binlog still synced" "about 1 s of InnoDB's commits (\`innodb_flush_log_at_timeout\`); the synced binlog may then hold transactions InnoDB lost" svc_mdb tps
	knob_row "MariaDB trx/s" "\`innodb_flush_log_at_trx_commit=2\` and \`sync_binlog=0\`" "about 1 s of InnoDB's commits; the binlog is never synced by the server (whatever the kernel had not written back)" svc_mdb tps knob0
	knob_row "PostgreSQL tps" "\`synchronous_commit=off\`" "up to 3 x \`wal_writer_delay\`, 600 ms by default" svc_pg tps
	knob_row "Redis SET/s" "\`appendfsync everysec\`" "about 1 s of writes (2 s when a sync is slow)" svc_redis sets_per_sec
	echo
	echo "No knob is run for sqlite (\`synchronous=NORMAL\` in WAL mode syncs at checkpoints only: it loses every commit since the last one) or for the per-commit log (the program's own)."
	grep -q failed "$WORK"/svc_*.out 2>/dev/null && echo && echo "Some runs failed (counted as missing): $(grep -c failed "$WORK"/svc_*.out | grep -v ':0$' | tr '\n' ' ')"
	echo
	echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (at the start: $load0); the section took $(($(date +%s) - t0)) s."
	echo
}

section_syscall() {
	local rounds=${ROUNDS:-9} n=${SYSCALL_LOOPS:-300000}
	echo "## libc's syscall(): the cost of the switch (tight syscall(SYS_gettid) loop)"
	echo
	echo "\`uring_ops gettid $n\`: $n calls of \`syscall(SYS_gettid)\`, a number the shim passes through (on x86_64 a bit test and a tail jump into libc's syscall()). No shim and the shim (logging off), A B A B, $rounds rounds. Each run reports wall time and the calling thread's own CPU time per call (CLOCK_THREAD_CPUTIME_ID, less disturbed by other tenants); medians, and the ratio of minima (the least disturbed runs)."
	echo
	for ((r = 0; r < rounds; r++)); do
		run_cfg sc_none "$B/tests/progs/uring_ops" gettid $n
		run_cfg sc_shim env LD_PRELOAD="$SHIM" "$B/tests/progs/uring_ops" gettid $n
	done
	local a b ac bc am bm
	a=$(medall sc_none ns_per_call); b=$(medall sc_shim ns_per_call)
	ac=$(medall sc_none cpu_ns_per_call); bc=$(medall sc_shim cpu_ns_per_call)
	am=$(minall sc_none cpu_ns_per_call); bm=$(minall sc_shim cpu_ns_per_call)
	echo "| configuration | CPU ns/call (median) | runs | vs no shim | ratio of minima | wall ns/call (median) | wall ratio | target |"
	echo "|---|---|---|---|---|---|---|---|"
	echo "| no shim | $ac | $(runs sc_none cpu_ns_per_call) | 1.000 | 1.000 | $a | 1.000 | |"
	echo "| shim | $bc | $(runs sc_shim cpu_ns_per_call) | $(ratio "$bc" "$ac") | $(ratio "$bm" "$am") | $b | $(ratio "$b" "$a") | <= 1.05 (issue 19) |"
	echo
	trap_costs "$rounds"
}

# trap_cost_round PREFIX: one round of the four inline-call loops below,
# into PREFIX_none, _shim, _empty, _libc.
trap_cost_round() {
	local n=${TRAP_LOOPS:-200000} ic=$B/tests/progs/inline_calls
	run_cfg "$1_none" "$ic" cost x "$n"
	run_cfg "$1_shim" env SYNCSHIM_INLINE_SYSCALLS=trap "$RUN" run -p defer -- "$ic" cost x "$n"
	run_cfg "$1_empty" "$ic" cost-sud-empty x "$n"
	run_cfg "$1_libc" "$ic" cost-sud-libc x "$n"
}

# trap_costs ROUNDS: one inline system call, untrapped and trapped, and
# where a trapped call's cost goes (the signal, the handler's work).
trap_costs() {
	local rounds=$1 n=${TRAP_LOOPS:-200000}
	echo "### An inline system call trapped (\`inline_syscalls = trap\`): the signal and the handler's work"
	echo
	echo "\`inline_calls cost x $n\` (tests/progs): $n \`getppid\` calls made by the program's own \`syscall\` instruction, as fio makes its ring calls. Four ways, A B C D, $rounds rounds: no shim (the call itself); under \`syncshim run -p defer\` with \`inline_syscalls = trap\` (each call a SIGSYS whose handler, the shim's, carries it out through the shim's \`syscall()\`); and, with no shim, under a syscall user dispatch of the program's own whose SIGSYS handler only sets the result (\`cost-sud-empty\`: the signal's delivery and return, nothing else) or makes the call through libc's \`syscall()\` (\`cost-sud-libc\`: the signal and the call, the least any handler does). Medians of the calling thread's CPU time per call (CLOCK_THREAD_CPUTIME_ID: the signal's delivery and return run on it) and of wall time."
	echo
	for ((r = 0; r < rounds; r++)); do
		trap_cost_round tc
	done
	local c0 ce cl cs
	c0=$(medall tc_none cpu_ns_per_call); ce=$(medall tc_empty cpu_ns_per_call)
	cl=$(medall tc_libc cpu_ns_per_call); cs=$(medall tc_shim cpu_ns_per_call)
	echo "| one inline getppid | CPU ns/call (median) | runs | wall ns/call (median) |"
	echo "|---|---|---|---|"
	echo "| no shim, untrapped | $c0 | $(runs tc_none cpu_ns_per_call) | $(medall tc_none ns_per_call) |"
	echo "| own dispatch, empty handler (the signal alone) | $ce | $(runs tc_empty cpu_ns_per_call) | $(medall tc_empty ns_per_call) |"
	echo "| own dispatch, handler makes the call through libc | $cl | $(runs tc_libc cpu_ns_per_call) | $(medall tc_libc ns_per_call) |"
	echo "| the shim, \`inline_syscalls = trap\` | $cs | $(runs tc_shim cpu_ns_per_call) | $(medall tc_shim ns_per_call) |"
	echo
	awk -v c0="$c0" -v ce="$ce" -v cl="$cl" -v cs="$cs" 'BEGIN {
		if (cs == "nan" || ce == "nan" || cl == "nan") { print "Some runs failed (no inclusive syscall user dispatch here?)."; exit }
		printf "A trapped call costs %.0f ns of CPU more than an untrapped one: the signal'"'"'s delivery and return %.0f ns (%.0f%% of the trapped call), the shim'"'"'s handler beyond the least a handler does %.0f ns.\n", cs - c0, ce, 100 * ce / cs, cs - cl
	}'
	echo
}

# cpu_of CMD...: runs CMD (its stdout to $WORK/cmd.out, stderr dropped)
# and prints the user+sys seconds of its whole process tree (bash's time,
# to the millisecond); nothing if it failed.
cpu_of() {
	local t
	t=$({
		TIMEFORMAT='%3U %3S'
		time "$@" >"$WORK/cmd.out" 2>/dev/null
	} 2>&1) || return 0
	echo "$t" | awk 'NF == 2 {print $1 + $2}'
}

# fio_run NAME ENGINE SYNC POLICY|none|eatmydata [SIZE]: one fio run's
# write IOPS and CPU seconds (cpu_s: user+sys of the whole process tree,
# fio's job process and the shim's threads included, from bash's time to
# the millisecond) as a result line (4 KiB sequential writes of SIZE,
# default FIO_SIZE, a sync after each).
fio_run() {
	local name=$1 engine=$2 sync=$3 how=$4 size=${5:-${FIO_SIZE:-16m}} pre=() cpu iops
	case $how in
	none) ;;
	eatmydata) pre=(eatmydata) ;;
	*) pre=("$RUN" run -p "$how" --) ;;
	esac
	rm -f "$WORK/fio.dat" "$WORK/cmd.out"
	cpu=$(cpu_of "${pre[@]}" fio --name=u --filename="$WORK/fio.dat" --size="$size" --bs=4k --rw=write \
		--ioengine="$engine" --"$sync"=1 --minimal)
	iops=$(awk -F';' 'NF > 49 {print $49}' "$WORK/cmd.out" 2>/dev/null || true)
	if [ -n "$iops" ] && [ -n "$cpu" ]; then
		echo "result: iops=$iops cpu_s=$cpu" >>"$WORK/$name.out"
	else
		echo "result: failed=1" >>"$WORK/$name.out"
	fi
}

section_uring() {
	local rounds=${ROUNDS:-3} e h
	echo "## Syncs around libc: io_uring and libaio (fio, and a liburing program)"
	echo
	echo "fio 3.33, 4 KiB sequential writes of ${FIO_SIZE:-16m}, \`--fsync=1\` (a sync after each write), engines psync (pwrite + fsync through libc), libaio (io_submit writes, fsync through libc) and io_uring (\`IORING_OP_WRITE\` + \`IORING_OP_FSYNC\` in the ring); then \`uring_ops chain\` (tests/progs: liburing, each round a WRITE linked to an FSYNC, both reaped) and the same program making the same round with pwrite and fsync through libc (\`chain ... libc\`). No shim, each policy, libeatmydata; $rounds rounds interleaved; median write IOPS (rounds/s for uring_ops). The files are on /tmp's file system."
	echo
	local hows=(none passthrough fdatasync group defer noop eatmydata)
	for ((r = 0; r < rounds; r++)); do
		for h in "${hows[@]}"; do
			for e in psync libaio io_uring; do
				fio_run "fio_${e}_$h" "$e" fsync "$h"
			done
			case $h in # the shim's policies again, fio's inline ring calls trapped
			none | eatmydata) ;;
			*) SYNCSHIM_INLINE_SYSCALLS=trap fio_run "fio_io_uring_trap_$h" io_uring fsync "$h" ;;
			esac
			if [ "$h" = defer ]; then # fio_trap_vs_psync's runs
				fio_run fx_psync psync fsync defer "${FIO_TRAP_SIZE:-64m}"
				SYNCSHIM_INLINE_SYSCALLS=trap fio_run fx_trap io_uring fsync defer "${FIO_TRAP_SIZE:-64m}"
				fio_run fx_psync0 psync fsync defer 4k
				SYNCSHIM_INLINE_SYSCALLS=trap fio_run fx_trap0 io_uring fsync defer 4k
				trap_cost_round ut
			fi
			for m in ring libc; do
				local extra=()
				[ $m = libc ] && extra=(libc)
				case $h in
				none) run_cfg "ur_${m}_$h" "$B/tests/progs/uring_ops" chain "$WORK/ur.dat" 2000 "${extra[@]}" ;;
				eatmydata) run_cfg "ur_${m}_$h" eatmydata "$B/tests/progs/uring_ops" chain "$WORK/ur.dat" 2000 "${extra[@]}" ;;
				*) run_cfg "ur_${m}_$h" "$RUN" run -p "$h" -- "$B/tests/progs/uring_ops" chain "$WORK/ur.dat" 2000 "${extra[@]}" ;;
				esac
			done
		done
	done
	echo "| configuration | fio psync IOPS | fio libaio IOPS | fio io_uring IOPS | fio io_uring vs psync | fio io_uring, inline_syscalls = trap | trap vs psync | uring_ops ring rounds/s | uring_ops libc rounds/s | uring_ops ring vs libc |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for h in "${hows[@]}"; do
		local p l u t o ol
		p=$(medall "fio_psync_$h" iops); l=$(medall "fio_libaio_$h" iops); u=$(medall "fio_io_uring_$h" iops)
		t=-
		[ -f "$WORK/fio_io_uring_trap_$h.out" ] && t=$(medall "fio_io_uring_trap_$h" iops)
		o=$(medall "ur_ring_$h" rounds_per_sec); ol=$(medall "ur_libc_$h" rounds_per_sec)
		local tr=-
		[ "$t" != - ] && tr=$(ratio "$t" "$p")
		echo "| $h | $p | $l | $u | $(ratio "$u" "$p") | $t | $tr | $o | $ol | $(ratio "$o" "$ol") |"
	done
	echo
	echo "fio enters its ring by inline system calls (\`objdump -d /usr/bin/fio\`: \`mov \$0x1aa,%eax; syscall\`, io_uring_enter), so by default its ring syncs are out of the shim's sight whatever the policy; the shim says so in one line at the ring's unmap. With \`inline_syscalls = trap\` (syscall user dispatch on the program's own text, shim/calls/inline_trap.c) every inline call costs one SIGSYS and is carried out by the shim, so the ring's syncs follow the policy. A program that submits through liburing's exported functions or libc's \`syscall()\` (\`uring_ops\`, QEMU) gets the policy without it."
	echo
	fio_trap_vs_psync
}

# The trapped fio ring against fio psync, both under defer (the runs
# section_uring made for it): IOPS and CPU per write, the ring's enters per
# write (strace, one untimed run each), and the floor of any design that
# pays one signal per enter.
fio_trap_vs_psync() {
	local size=${FIO_TRAP_SIZE:-64m} count=4m e_trap e_none writes cw=1024
	writes=$(($(numfmt --from=iec "$(echo "$size" | tr a-z A-Z)") / 4096))
	echo "### fio io_uring with \`inline_syscalls = trap\` against fio psync, both under defer"
	echo
	rm -f "$WORK/fio.dat"
	SYNCSHIM_INLINE_SYSCALLS=trap strace -f -c -o "$WORK/st_trap.txt" "$RUN" run -p defer -- fio --name=u \
		--filename="$WORK/fio.dat" --size=$count --bs=4k --rw=write --ioengine=io_uring --fsync=1 --minimal >/dev/null 2>&1 || true
	rm -f "$WORK/fio.dat"
	strace -f -c -o "$WORK/st_none.txt" fio --name=u --filename="$WORK/fio.dat" --size=$count --bs=4k --rw=write \
		--ioengine=io_uring --fsync=1 --minimal >/dev/null 2>&1 || true
	e_trap=$(awk '$NF == "io_uring_enter" {print $4}' "$WORK/st_trap.txt" 2>/dev/null || true)
	e_none=$(awk '$NF == "io_uring_enter" {print $4}' "$WORK/st_none.txt" 2>/dev/null || true)
	local p u pc uc c0 ce cl cs
	p=$(medall fx_psync iops); u=$(medall fx_trap iops)
	# CPU per write: the run's CPU less a one-write run's (fio's and the shim's start and exit)
	pc=$(awk -v a="$(medall fx_psync cpu_s)" -v b="$(medall fx_psync0 cpu_s)" -v w="$writes" 'BEGIN {printf "%.2f", (a - b) * 1e6 / (w - 1)}')
	uc=$(awk -v a="$(medall fx_trap cpu_s)" -v b="$(medall fx_trap0 cpu_s)" -v w="$writes" 'BEGIN {printf "%.2f", (a - b) * 1e6 / (w - 1)}')
	c0=$(medall ut_none cpu_ns_per_call); ce=$(medall ut_empty cpu_ns_per_call)
	cl=$(medall ut_libc cpu_ns_per_call); cs=$(medall ut_shim cpu_ns_per_call)
	echo "fio 3.33, $size of 4 KiB sequential writes ($writes), \`--fsync=1\`, under \`syncshim run -p defer\`: engine psync, and engine io_uring with \`SYNCSHIM_INLINE_SYSCALLS=trap\`; once a round in the uring section's rounds, beside one-write runs of each (4k: what starting and ending fio and the shim cost) and the \`inline_calls\` loops of the syscall section. Write IOPS as fio reports them; CPU per write: user+sys of the whole process tree (bash's \`time\`: fio's job process, the ring's io-wq workers and the shim's threads included) less the one-write run's, over the writes. Enters per write: \`strace -f -c\` of one untimed run of $count ($cw writes) each, counting \`io_uring_enter\` (the trapped ones included: the shim makes them through libc)."
	echo
	echo "| under defer | write IOPS (median) | runs | CPU us/write | CPU s per run | one-write runs, CPU s | io_uring_enter per write |"
	echo "|---|---|---|---|---|---|---|"
	echo "| fio psync | $p | $(runs fx_psync iops) | $pc | $(medall fx_psync cpu_s) | $(medall fx_psync0 cpu_s) | - |"
	echo "| fio io_uring, \`inline_syscalls = trap\` | $u | $(runs fx_trap iops) | $uc | $(medall fx_trap cpu_s) | $(medall fx_trap0 cpu_s) | $(awk -v e="$e_trap" -v w=$cw 'BEGIN {if (e == "") print "n/a"; else printf "%.2f", e / w}') |"
	echo "| fio io_uring, no shim (for the count) | | | | | | $(awk -v e="$e_none" -v w=$cw 'BEGIN {if (e == "") print "n/a"; else printf "%.2f", e / w}') |"
	echo
	awk -v p="$p" -v u="$u" -v pc="$pc" -v uc="$uc" -v e="$e_trap" -v w=$cw -v c0="$c0" -v ce="$ce" -v cl="$cl" -v cs="$cs" 'BEGIN {
		if (p == "nan" || u == "nan" || pc == "nan" || uc == "nan" || e == "" || cs == "nan" || ce == "nan" || cl == "nan") {
			print "Some runs failed: no ratio or floor."; exit
		}
		n = e / w; tp = 1e6 / p; tu = 1e6 / u                    # wall us per write
		h = (cs - cl) / 1000; s = ce / 1000; x = (cs - c0) / 1000 # us of CPU per trapped call
		printf "Trap against psync under defer: **%.3f** in IOPS, %.3f in CPU per write (psync'"'"'s CPU over the trap'"'"'s). ", u / p, pc / uc
		printf "Per call (inline_calls, CPU): the signal'"'"'s delivery and return %.2f us, the shim'"'"'s handler beyond the least a handler does %.2f us, an untrapped call %.2f us; per write, %.2f trapped enters: %.2f us of signals, %.2f us of the handler. ", s, h, c0 / 1000, n, n * s, n * h
		printf "The floor of a design that pays one signal per enter (these runs with the handler'"'"'s work taken out, the signals left): %.3f of psync in IOPS, %.3f in CPU. ", tp / (tu - n * h), pc / (uc - n * h)
		printf "With the signals out too (the ring entered through libc'"'"'s syscall(), estimated from the same figures): %.3f in IOPS, %.3f in CPU.\n", tp / (tu - n * x), pc / (uc - n * x)
	}'
	echo
}

# ---- tracefs: what the kernel was handed --------------------------------------
TRACEFS=/sys/kernel/tracing

# trace_ready: tracefs mounted (mounting it if need be) with io_uring's
# submissions and ext4's syncs to record.
trace_ready() {
	[ -w "$TRACEFS/instances" ] || mount -t tracefs nodev "$TRACEFS" 2>/dev/null || true
	[ -w "$TRACEFS/instances" ] && [ -e "$TRACEFS/events/io_uring/io_uring_submit_req/enable" ] &&
		[ -e "$TRACEFS/events/ext4/ext4_sync_file_enter/enable" ]
}

# traced NAME FILE CMD...: runs CMD (output discarded) with two tracefs
# instances: one records the io_uring entries CMD's process tree submits
# (opcode as the kernel got it), the other every real sync of FILE's inode
# by anyone (its io_uring workers, its threads, the shim's flusher).
# Appends "trace: fsync= nop= writev= write= ring_syncs= ring_datasyncs=
# other_syncs= other_datasyncs= lost=" to $WORK/NAME.trace.
traced() {
	local name=$1 file=$2 sub=$TRACEFS/instances/syncshim-bench-$$-s syn=$TRACEFS/instances/syncshim-bench-$$-i
	shift 2
	rmdir "$sub" "$syn" 2>/dev/null || true
	mkdir "$sub" "$syn"
	push_cleanup "rmdir '$sub' '$syn' 2>/dev/null"
	echo 32768 >"$sub/buffer_size_kb" # a submission is a few dozen bytes: 20,000 writes and flushes fit
	echo 8192 >"$syn/buffer_size_kb"
	echo 1 >"$sub/options/event-fork"
	echo "ino == $(stat -c %i "$file")" >"$syn/events/ext4/ext4_sync_file_enter/filter"
	echo 1 >"$syn/events/ext4/ext4_sync_file_enter/enable"
	echo 1 >"$sub/events/io_uring/io_uring_submit_req/enable"
	(
		echo "$BASHPID" >"$sub/set_event_pid"
		exec "$@"
	) >/dev/null 2>&1 || true
	echo 0 >"$sub/events/enable"
	echo 0 >"$syn/events/enable"
	local lost
	lost=$(cat "$sub"/per_cpu/cpu*/stats "$syn"/per_cpu/cpu*/stats | awk '/^overrun:/ {n += $2} END {print n + 0}')
	{
		awk '/opcode FSYNC,/ {f++} /opcode NOP,/ {n++} /opcode WRITEV,/ {v++} /opcode WRITE,/ {w++}
			END {printf "trace: fsync=%d nop=%d writev=%d write=%d ", f, n, v, w}' "$sub/trace"
		awk -v lost="$lost" '/ext4_sync_file_enter/ {
				ds = / datasync 1/; sub(/^ +/, "")
				if ($0 ~ /^iou-wrk-/) {r++; rd += ds} else {o++; od += ds}
			}
			END {printf "ring_syncs=%d ring_datasyncs=%d other_syncs=%d other_datasyncs=%d lost=%d\n", r, rd, o, od, lost}' "$syn/trace"
	} >>"$WORK/$name.trace"
	pop_cleanup
}
trfield() { field "$2" <"$WORK/$1.trace"; } # trfield NAME FIELD: the last traced run's

# QEMU's block layer through its io_uring backend (liburing, dynamically
# linked: seen without any trap) against its thread pool, a flush after
# every write.
section_qemu() {
	local rounds=${ROUNDS:-3} n=${QEMU_COUNT:-20000} h aio
	echo "## QEMU's io_uring backend: a guest flush after every write (qemu-img bench)"
	echo
	if ! command -v qemu-img >/dev/null; then
		echo "qemu-img (qemu-utils) not installed: skipped."
		echo
		return
	fi
	local img=$WORK/q.img want=$WORK/q.want size=$((n * 4096))
	head -c "$size" /dev/zero | tr '\0' '\253' >"$want"
	qemu_cmd() { # qemu_cmd AIO [COUNT]: the benchmark, on a fresh image of zeros
		rm -f "$img"
		truncate -s "$size" "$img"
		echo qemu-img bench -f raw -w -c "${2:-$n}" -s 4k -d 1 -i "$1" --flush-interval=1 -t writeback --pattern=171 "$img"
	}
	qemu_pre() { # qemu_pre HOW: what runs it
		case $1 in
		none) ;;
		eatmydata) echo eatmydata ;;
		*) echo "$RUN" run -p "$1" -- ;;
		esac
	}
	echo "\`qemu-img bench -f raw -w -c $n -s 4k -d 1 -i AIO --flush-interval=1 -t writeback --pattern=171 IMG\` (qemu-utils $(qemu-img --version | sed -n 's/^qemu-img version \([^ ]*\).*/\1/p')): $n writes of 4 KiB, one in flight, each followed by a flush (a guest's FLUSH CACHE), on a fresh sparse image of $((size / 1048576)) MiB on /tmp's file system. AIO \`io_uring\` (block/io_uring.c through liburing: writes as \`IORING_OP_WRITEV\`, flushes as \`IORING_OP_FSYNC\` with \`IORING_FSYNC_DATASYNC\`, \`io_uring_enter\` the only system call per request) against \`threads\` (its thread pool: pwritev and fdatasync through libc). No shim, passthrough, defer and Debian's libeatmydata; $rounds rounds, A B A B; median writes/s from QEMU's own \`Run completed in\` time, and CPU per write: user+sys of the process (bash's \`time\`) less a one-write run's (\`-c 1\`: starting and ending), over the writes. After every run the image is compared with what was written (every byte 0xab)."
	echo
	local hows=(none passthrough defer eatmydata)
	if trace_ready; then
		for h in "${hows[@]}"; do # the proof: one traced run each, apart from the timed ones
			local cmd
			read -r -a cmd <<<"$(qemu_cmd io_uring)"
			local pre
			read -r -a pre <<<"$(qemu_pre "$h")"
			traced "qm_$h" "$img" "${pre[@]}" "${cmd[@]}"
		done
	fi
	for ((r = 0; r < rounds; r++)); do
		for h in "${hows[@]}"; do
			for aio in io_uring threads; do
				local cmd pre cpu cpu1 secs ok
				read -r -a pre <<<"$(qemu_pre "$h")"
				read -r -a cmd <<<"$(qemu_cmd "$aio" 1)" # one write: what starting and ending costs
				cpu1=$(cpu_of "${pre[@]}" "${cmd[@]}")
				read -r -a cmd <<<"$(qemu_cmd "$aio")"
				cpu=$(cpu_of "${pre[@]}" "${cmd[@]}")
				secs=$(sed -n 's/^Run completed in \([0-9.]*\) seconds.*/\1/p' "$WORK/cmd.out")
				ok=0
				cmp -s "$img" "$want" && ok=1
				if [ -n "$secs" ] && [ -n "$cpu" ] && [ -n "$cpu1" ]; then
					echo "result: writes_per_sec=$(awk -v n="$n" -v s="$secs" 'BEGIN {printf "%.0f", n / s}') cpu_us_per_write=$(awk -v n="$n" -v a="$cpu" -v b="$cpu1" 'BEGIN {printf "%.2f", (a - b) * 1e6 / (n - 1)}') image_ok=$ok" >>"$WORK/qb_${aio}_$h.out"
				else
					echo "result: failed=1 image_ok=$ok" >>"$WORK/qb_${aio}_$h.out"
				fi
			done
		done
	done
	echo "| configuration | io_uring writes/s (median) | runs | threads writes/s (median) | runs | io_uring vs threads | CPU us/write io_uring | CPU us/write threads | images intact |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for h in "${hows[@]}"; do
		local u t good total
		u=$(medall "qb_io_uring_$h" writes_per_sec); t=$(medall "qb_threads_$h" writes_per_sec)
		good=$(cat "$WORK/qb_io_uring_$h.out" "$WORK/qb_threads_$h.out" | grep -c 'image_ok=1' || true)
		total=$(cat "$WORK/qb_io_uring_$h.out" "$WORK/qb_threads_$h.out" | wc -l)
		echo "| $h | $u | $(runs "qb_io_uring_$h" writes_per_sec) | $t | $(runs "qb_threads_$h" writes_per_sec) | $(ratio "$u" "$t") | $(medall "qb_io_uring_$h" cpu_us_per_write) | $(medall "qb_threads_$h" cpu_us_per_write) | $good of $total |"
	done
	echo
	echo "Acceptance (issue 31): io_uring under defer at least 0.8x of threads under defer, in this same invocation: **$(ratio "$(medall qb_io_uring_defer writes_per_sec)" "$(medall qb_threads_defer writes_per_sec)")**."
	echo
	if [ -f "$WORK/qm_none.trace" ]; then
		echo "What the kernel was handed (tracefs, one more run of the io_uring command per configuration, untimed): \`io_uring:io_uring_submit_req\` for the process tree, by opcode as submitted; \`ext4:ext4_sync_file_enter\` on the image's inode, by who made the sync (io_uring's workers, \`iou-wrk\`, on the ring's behalf, or anyone else: QEMU's threads, the shim's flusher) and whether it was a datasync."
		echo
		echo "| configuration | FSYNC submitted | NOP submitted | WRITEV submitted | syncs of the image by the ring (datasync) | by others (datasync) | events lost |"
		echo "|---|---|---|---|---|---|---|"
		for h in "${hows[@]}"; do
			echo "| $h | $(trfield "qm_$h" fsync) | $(trfield "qm_$h" nop) | $(trfield "qm_$h" writev) | $(trfield "qm_$h" ring_syncs) ($(trfield "qm_$h" ring_datasyncs)) | $(trfield "qm_$h" other_syncs) ($(trfield "qm_$h" other_datasyncs)) | $(trfield "qm_$h" lost) |"
		done
		echo
		echo "Under defer each ring FSYNC reached the kernel as a NOP (same user_data and place; QEMU saw it complete with 0) and the image was made durable by the shim's flusher; under passthrough the entries are the ones QEMU submitted (its FSYNCs, each a datasync); libeatmydata cannot see the ring."
	else
		echo "tracefs (io_uring:io_uring_submit_req, ext4:ext4_sync_file_enter) not available here: no record of what the kernel was handed."
	fi
	echo
}

echo "# Benchmark run $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n), kernel $(uname -r), $(nproc) cores"
echo
for s in $SECTIONS; do
	"section_$s"
done
