#!/usr/bin/env bash
# walkthrough.sh - Debian's ActiveMQ broker under syncshim, A/B.
#
# Puts the broker of Debian's `activemq` package in front of a bounded
# producer of persistent messages (the broker's own `producer` command,
# one KahaDB journal fsync per message or per batch), once with its
# journal under passthrough and once under a `defer` (or `group`) rule, with
# `syncshim ab`, and ends with the A/B comparison table of the broker's
# sync latency (`synclat compare`).
#
#   examples/activemq/walkthrough.sh [-p defer|group] [-n MESSAGES] [-t THREADS]
#                                    [-r ROUNDS] [-d MAX_DELAY_MS] [-o DIR] [-k]
#
#   -p POLICY   the journal's policy on side B: defer (default) or group
#   -n N        persistent messages per producer thread (default 2000)
#   -t N        producer threads (default 1)
#   -r N        rounds of A then B (default 1)
#   -d MS       defer: max_delay_ms of the journal rule (default 50)
#   -o DIR      keep the logs, plots and broker output in DIR (default: a
#               temp dir, removed at the end)
#   -k          keep the temp dir
#
# Everything runs in one directory of its own: the broker's config
# (generated; ActiveMQ 5.17 from /usr/share/activemq), its KahaDB, the two
# rule files, the logs. The broker listens on 127.0.0.1 on a port the
# kernel picks (tcp://127.0.0.1:0), and runs as a non-root user: as root,
# the script runs as $WALKTHROUGH_USER (default nobody) through setpriv.
# Each step is bounded in time, and a trap stops the broker and removes
# the directory however the script ends. syncshim, synclat and
# libsyncshim.so come from $SYNCSHIM_BUILD (default: the build/ directory
# of this tree), else from PATH (an installed syncshim).
#
# `make demo-activemq` runs it; the test suite runs it with fewer messages
# (tests/system/test_install.c).
set -euo pipefail

AMQ_HOME=${AMQ_HOME:-/usr/share/activemq}
JAVA=${JAVA:-java}

# ---- one round: what `syncshim ab` runs, under the shim --------------------
# __round DIR: start the broker with the config of this side (named by the
# rule file syncshim ab hands the shim in SYNCSHIM_CONFIG), send the
# messages, stop it. Everything it prints goes to a pipe (not tracked by
# the shim), and the helpers it starts that are not the broker run without
# the shim (env -u LD_PRELOAD), so the logs are the broker's alone.
round() {
	local dir=$1 side messages threads
	side=$(basename "${SYNCSHIM_CONFIG:?__round runs under syncshim ab}" .ini)
	read -r messages threads < "$dir/load"
	local run=$dir/$side
	broker="" # global: the EXIT trap outlives this function
	stop_broker() {
		[ -n "$broker" ] || return 0
		kill -TERM "$broker" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$broker" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$broker" 2>/dev/null || true
		wait "$broker" 2>/dev/null || true
		broker=""
	}
	trap stop_broker EXIT
	rm -rf "$run/data"
	"$JAVA" -Xms64m -Xmx256m -XX:-UsePerfData -Djava.io.tmpdir="$run/tmp" \
		-Dactivemq.classpath="$dir/conf" -Dactivemq.home="$AMQ_HOME" -Dactivemq.base="$run" \
		-Dactivemq.conf="$dir/conf" -Dactivemq.data="$run/data" \
		-jar "$AMQ_HOME/bin/activemq.jar" start "xbean:file:$run/activemq.xml" \
		> >(env -u LD_PRELOAD cat > "$run/broker.out") 2>&1 &
	broker=$!
	local port="" t0
	t0=$(date +%s)
	while [ -z "$port" ]; do
		kill -0 "$broker" 2>/dev/null || { echo "$side: the broker exited:"; tail -20 "$run/broker.out"; return 1; }
		[ $(($(date +%s) - t0)) -lt 60 ] || { echo "$side: the broker did not start in 60 s:"; tail -20 "$run/broker.out"; return 1; }
		sleep 0.2
		grep -q 'Apache ActiveMQ .* started' "$run/broker.out" 2>/dev/null || continue
		port=$(sed -n 's|.*Listening for connections at: tcp://[^:]*:\([0-9][0-9]*\).*|\1|p' "$run/broker.out" | head -1)
	done

	timeout 120 env -u LD_PRELOAD "$JAVA" -Xmx128m -XX:-UsePerfData -Dactivemq.home="$AMQ_HOME" \
		-Dactivemq.base="$run" -Dactivemq.conf="$dir/conf" -Dactivemq.classpath="$dir/conf" \
		-jar "$AMQ_HOME/bin/activemq.jar" producer --brokerUrl "tcp://127.0.0.1:$port" \
		--destination queue://syncshim.walkthrough --persistent true \
		--messageCount "$messages" --parallelThreads "$threads" --messageSize 1024 \
		> "$run/producer.out" 2>&1 &
	local producer=$!

	# ---- LIVE VIEW --------------------------------------------------------
	# While the producer runs: the broker's live view, its journal rule,
	# calls/s, sync latency and data at risk (the rules say live = on).
	# `synclat top -p PID` is the interactive one. Its lines carry the
	# side's name: the main script shows only the rounds' lines that do.
	sleep 1.5
	env -u LD_PRELOAD "$dir/bin/synclat" top --once -p "$broker" 2>&1 |
		env -u LD_PRELOAD sed "s/^/$side: /" || true
	# -----------------------------------------------------------------------

	local rc=0
	wait "$producer" || rc=$?
	stop_broker
	local sent ms
	sent=$(grep -c 'Produced: [0-9]* messages' "$run/producer.out" || true)
	ms=$(sed -n 's/.*Elapsed time in milli second : \([0-9]*\).*/\1/p' "$run/producer.out" | sort -n | tail -1)
	if [ "$rc" != 0 ] || [ "$sent" != "$threads" ]; then
		echo "$side: the producer failed (exit $rc):"
		tail -20 "$run/producer.out"
		return 1
	fi
	echo "$side: broker on 127.0.0.1:$port, $threads x $messages persistent messages sent in ${ms:-?} ms"
}

if [ "${1:-}" = __round ]; then
	round "$2"
	exit
fi

# ---- the walkthrough ---------------------------------------------------------
usage() { sed -n 's/^#   \{0,1\}//p' "$0" | sed -n '/^examples/,/^-k/p'; }
policy=defer messages=2000 threads=1 rounds=1 delay=50 out="" keep=0
while getopts "p:n:t:r:d:o:kh" opt; do
	case $opt in
	p) policy=$OPTARG ;;
	n) messages=$OPTARG ;;
	t) threads=$OPTARG ;;
	r) rounds=$OPTARG ;;
	d) delay=$OPTARG ;;
	o) out=$OPTARG ;;
	k) keep=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
case $policy in defer | group) ;; *) echo "walkthrough: -p takes defer or group" >&2; exit 2 ;; esac
for v in "$messages" "$threads" "$rounds" "$delay"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "walkthrough: '$v' is not a positive number" >&2; exit 2; }
done

say() { printf '\n== %s\n' "$*"; }
die() { echo "walkthrough: $*" >&2; exit 1; }

# The tools: a build tree, else an installed syncshim.
here=$(cd "$(dirname "$0")" && pwd)
build=${SYNCSHIM_BUILD:-$here/../../build}
if [ -x "$build/syncshim" ] && [ -x "$build/synclat" ] && [ -r "$build/libsyncshim.so" ]; then
	tools=("$build/syncshim" "$build/synclat" "$build/libsyncshim.so")
elif command -v syncshim >/dev/null && command -v synclat >/dev/null; then
	bin=$(dirname "$(readlink -f "$(command -v syncshim)")")
	lib=""
	for l in "$bin/libsyncshim.so" "$bin/../lib/syncshim/libsyncshim.so" "$bin/../lib/libsyncshim.so"; do
		[ -r "$l" ] && { lib=$l; break; }
	done
	[ -n "$lib" ] || die "found $bin/syncshim but not its libsyncshim.so"
	tools=("$bin/syncshim" "$(readlink -f "$(command -v synclat)")" "$lib")
else
	die "no syncshim: run make (or set SYNCSHIM_BUILD), or install it"
fi
[ -r "$AMQ_HOME/bin/activemq.jar" ] || die "no ActiveMQ in $AMQ_HOME: apt-get install activemq"
command -v "$JAVA" >/dev/null || die "no java: apt-get install default-jre-headless"

# The directory of this run, and the user it runs as.
if [ -n "$out" ]; then
	mkdir -p "$out"
	dir=$(cd "$out" && pwd)/activemq-walkthrough.$$
	keep=1
else
	dir=$(mktemp -d "${TMPDIR:-/tmp}/syncshim-activemq.XXXXXX")
fi
cleanup() {
	local rc=$?
	# A round's broker is stopped by the round's own trap; a broker left
	# behind by a round that was killed is stopped here, by its command line.
	local pids
	pids=$(pgrep -f -- "-Dactivemq.base=$dir/" || true)
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
	if [ "$keep" = 1 ]; then echo "walkthrough: kept $dir" >&2; else rm -rf "$dir"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$dir/bin" "$dir/conf" "$dir/home" "$dir/passthrough/tmp" "$dir/$policy/tmp"
cp "${tools[@]}" "$dir/bin/"
cp "$0" "$dir/bin/walkthrough.sh"
echo "$messages $threads" > "$dir/load"

as_user=()
if [ "$(id -u)" = 0 ]; then
	user=${WALKTHROUGH_USER:-nobody}
	id "$user" >/dev/null 2>&1 || die "no user $user (set WALKTHROUGH_USER)"
	group=$(id -gn "$user")
	as_user=(setpriv --reuid="$user" --regid="$group" --clear-groups --)
fi

# The broker: KahaDB in the side's data directory, OpenWire on a port the
# kernel picks, no JMX, no web console. ActiveMQ's default is one journal
# sync per persistent send (enableJournalDiskSyncs, journalDiskSyncStrategy
# always); its journal appender batches the sends that arrive together.
for side in passthrough "$policy"; do
	cat > "$dir/$side/activemq.xml" <<EOF
<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="walkthrough-$side"
          useJmx="false" persistent="true" dataDirectory="$dir/$side/data">
    <persistenceAdapter><kahaDB directory="$dir/$side/data/kahadb"/></persistenceAdapter>
    <systemUsage><systemUsage>
      <storeUsage><storeUsage limit="1 gb"/></storeUsage>
      <tempUsage><tempUsage limit="256 mb"/></tempUsage>
    </systemUsage></systemUsage>
    <transportConnectors>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:0"/>
    </transportConnectors>
  </broker>
</beans>
EOF
done
cat > "$dir/conf/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, out
log4j.logger.org.springframework=WARN
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p %m%n
EOF

# The two sides: one rule for the KahaDB journal (db-N.log), which only
# the policy tells apart; every other file of the broker is passthrough.
rule() { # SIDE SYNC [KEY = VALUE...]
	local side=$1 sync=$2
	shift 2
	{
		echo "[shim]"
		echo "policy = passthrough"
		echo "live = on"
		echo
		echo "[rule journal]"
		echo "path = $dir/**/kahadb/db-*.log"
		echo "sync = $sync"
		for kv in "$@"; do echo "$kv"; done
	} > "$dir/$side.ini"
	"$dir/bin/syncshim" check "$dir/$side.ini" >/dev/null
}
rule passthrough passthrough
if [ "$policy" = defer ]; then
	rule defer defer "max_delay_ms = $delay" "max_calls = 1000000"
else
	rule group group
fi
chmod -R a+rX "$dir"
[ ${#as_user[@]} = 0 ] || chown -R "$user:$group" "$dir"

say "ActiveMQ $(unzip -p "$AMQ_HOME/bin/activemq.jar" META-INF/MANIFEST.MF 2>/dev/null |
	sed -n 's/^Implementation-Version: *\([^[:space:]]*\).*/\1/p') from $AMQ_HOME, in $dir${as_user:+, as ${user}}"
echo "A: the KahaDB journal under passthrough; B: under $policy ($(sed -n '/^sync = /,$p' "$dir/$policy.ini" | tr '\n' ' '))"
echo "load: $threads producer thread(s) x $messages persistent 1 KiB messages, $rounds round(s) of A then B"

# syncshim ab runs the rounds (each under its side's rule file), logs the
# broker's every call (log_mode calls), and compares. Its output goes
# through a pipe, so the rounds' own output is not a tracked file write.
say "syncshim ab -n $rounds -m calls passthrough.ini $policy.ini -- walkthrough.sh __round"
set +e
(cd "$dir" && HOME=$dir/home timeout --kill-after=10 600 "${as_user[@]}" env HOME="$dir/home" \
	"$dir/bin/syncshim" ab -n "$rounds" -m calls -o "$dir/ab" "$dir/passthrough.ini" "$dir/$policy.ini" \
	-- "$dir/bin/walkthrough.sh" __round "$dir" 2>&1) | cat > "$dir/ab.out"
ab_rc=${PIPESTATUS[0]}
set -e
sed -n '/^passthrough: \|^'"$policy"': \|^round \|^wall time/p' "$dir/ab.out"
if [ "$ab_rc" != 0 ]; then
	cat "$dir/ab.out" >&2
	die "syncshim ab failed (exit $ab_rc)"
fi

# The journal's files alone: with log_mode = calls, synclat reports the
# sync latency of each file.
say "the journal (KahaDB db-N.log) alone, per side: synclat report --files"
for side in A B; do
	name=$([ $side = A ] && echo passthrough || echo "$policy")
	"$dir/bin/synclat" report --files "$dir"/ab/$side-*.log |
		awk -v side="$side $name" '/^files / { print "      " $0; next } /\/kahadb\/db-[0-9]+\.log$/ { printf "%-6s %s\n", substr(side, 1, 1), $0 }'
done | awk '!seen[$0]++'

say "synclat compare: the broker's calls, A = passthrough, B = $policy"
# (The plots go with the directory unless it is kept: -k, -o DIR.)
sed -n '/^synclat compare$/,$p' "$dir/ab.out" | sed '1d' | { [ "$keep" = 1 ] && cat || grep -v '^plot: '; }
