#!/usr/bin/env bash
# walkthrough.sh - Debian's ActiveMQ broker under syncshim, A/B.
#
# Puts the broker of Debian's `activemq` package in front of a bounded
# producer of persistent messages (the broker's own `producer` command,
# one KahaDB journal fsync per message or per batch) with one `syncshim
# ab` command in its service form: per round, A B A B, a fresh KahaDB,
# the broker under the side's rules, ready when its OpenWire port
# accepts, the producer (without the shim) as the load and its messages/s
# as the figure, then SIGTERM. It ends with the journal's sync latency per
# side and the A/B comparison table of the broker's calls (`synclat
# compare`).
#
#   examples/activemq/walkthrough.sh [-p defer|group|INI] [-n MESSAGES] [-t THREADS]
#                                    [-r ROUNDS] [-d MAX_DELAY_MS] [-o DIR] [-k]
#   examples/activemq/walkthrough.sh -P INI [-n MESSAGES] [-t THREADS] [-o DIR] [-k]
#
#   -p POLICY   side B: the journal under defer (default) or group, or the
#               rules of an ini file (say, one syncshim profile proposed)
#   -n N        persistent messages per producer thread (default 2000)
#   -t N        producer threads (default 1)
#   -r N        rounds of A then B (default 1)
#   -d MS       defer: max_delay_ms of the journal rule (default 50)
#   -P INI      profile instead: the same broker and load once under
#               `syncshim profile`, which writes the rules it proposes to INI
#   -o DIR      work in DIR/activemq-walkthrough and keep it (the logs, plots
#               and broker output); a profile and a later A/B with its INI
#               need the same DIR, so that they see the same paths
#   -k          keep the temp dir
#
# Everything runs in one directory of its own: the broker's config
# (generated; ActiveMQ 5.17 from /usr/share/activemq), its KahaDB, the
# rule files, the logs. The broker listens on 127.0.0.1 only, on a free
# port picked at random above 20000, and runs as a non-root user: as root,
# the script runs as $WALKTHROUGH_USER (default nobody) through setpriv.
# syncshim ab bounds every step (the broker's start by --timeout), stops
# the broker's process group after each round and on any failure or
# signal, and a trap removes the directory however the script ends.
# syncshim, synclat and libsyncshim.so come from $SYNCSHIM_BUILD
# (default: the build/ directory of this tree), else from PATH.
#
# `make demo-activemq` runs it; the test suite runs it with fewer messages
# (tests/system/test_install.c).
set -euo pipefail

AMQ_HOME=${AMQ_HOME:-/usr/share/activemq}
JAVA=${JAVA:-java}

usage() { sed -n 's/^#   \{0,1\}//p' "$0" | sed -n '/^examples/,/^-k/p'; }
policy=defer messages=2000 threads=1 rounds=1 delay=50 out="" keep=0 profile=""
while getopts "p:n:t:r:d:o:P:kh" opt; do
	case $opt in
	p) policy=$OPTARG ;;
	n) messages=$OPTARG ;;
	t) threads=$OPTARG ;;
	r) rounds=$OPTARG ;;
	d) delay=$OPTARG ;;
	o) out=$OPTARG ;;
	P) profile=$OPTARG ;;
	k) keep=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
side_b_ini=""
case $policy in
defer | group) ;;
*.ini) [ -r "$policy" ] || { echo "walkthrough: cannot read $policy" >&2; exit 2; }
	side_b_ini=$(realpath "$policy") policy=$(basename "$policy" .ini) ;;
*) echo "walkthrough: -p takes defer, group or an ini file" >&2; exit 2 ;;
esac
for v in "$messages" "$threads" "$rounds" "$delay"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "walkthrough: '$v' is not a positive number" >&2; exit 2; }
done
[ -z "$profile" ] || profile=$(realpath -m "$profile")

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
	dir=$(cd "$out" && pwd)/activemq-walkthrough
	rm -rf "$dir/ab" "$dir/data" "$dir/profile"
	mkdir -p "$dir"
	keep=1
else
	dir=$(mktemp -d "${TMPDIR:-/tmp}/syncshim-activemq.XXXXXX")
fi
cleanup() {
	local rc=$?
	# syncshim ab stops the broker; one left by a syncshim ab that was
	# itself killed is stopped here, by its command line.
	local pids
	pids=$(pgrep -f -- "xbean:file:$dir/activemq.xml" || true)
	[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
	if [ "$keep" = 1 ]; then echo "walkthrough: kept $dir" >&2; else rm -rf "$dir"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$dir/bin" "$dir/conf" "$dir/home" "$dir/tmp"
cp "${tools[@]}" "$dir/bin/"

as_user=()
if [ "$(id -u)" = 0 ]; then
	user=${WALKTHROUGH_USER:-nobody}
	id "$user" >/dev/null 2>&1 || die "no user $user (set WALKTHROUGH_USER)"
	group=$(id -gn "$user")
	as_user=(setpriv --reuid="$user" --regid="$group" --clear-groups --)
fi

# A free port on 127.0.0.1 from 20000 up to the kernel's ephemeral range,
# where no outgoing connection takes it meanwhile (another program may:
# then the broker fails to start and syncshim ab says so).
port="" low=32768
read -r low _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
[ "$low" -gt 21000 ] || low=60000
for _ in $(seq 1 50); do
	p=$((20000 + RANDOM % (low - 20000)))
	ss -Htln "sport = :$p" 2>/dev/null | grep -q . || { port=$p; break; }
done
[ -n "$port" ] || die "no free port found"

# The broker: KahaDB in $dir/data (made afresh before every round),
# OpenWire on 127.0.0.1:PORT, no JMX, no web console. ActiveMQ's default
# is one journal sync per persistent send (enableJournalDiskSyncs,
# journalDiskSyncStrategy always); its journal appender batches the sends
# that arrive together.
cat > "$dir/activemq.xml" <<EOF
<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="walkthrough"
          useJmx="false" persistent="true" dataDirectory="$dir/data">
    <persistenceAdapter><kahaDB directory="$dir/data/kahadb"/></persistenceAdapter>
    <systemUsage><systemUsage>
      <storeUsage><storeUsage limit="1 gb"/></storeUsage>
      <tempUsage><tempUsage limit="256 mb"/></tempUsage>
    </systemUsage></systemUsage>
    <transportConnectors>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:$port"/>
    </transportConnectors>
  </broker>
</beans>
EOF
cat > "$dir/conf/log4j.properties" <<'EOF'
log4j.rootLogger=INFO, out
log4j.logger.org.springframework=WARN
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p %m%n
EOF

# The load (syncshim ab runs it without the shim): the producer, the
# broker's live view while it runs, then its figure, messages/s.
cat > "$dir/load.sh" <<EOF
#!/usr/bin/env bash
set -u
side=\${SYNCSHIM_AB_SIDE:-profile}
case \$side in A) name=passthrough ;; B) name=$policy ;; *) name=\$side ;; esac
timeout 120 "$JAVA" -Xmx128m -XX:-UsePerfData -Dactivemq.home="$AMQ_HOME" \\
	-Dactivemq.base="$dir" -Dactivemq.conf="$dir/conf" -Dactivemq.classpath="$dir/conf" \\
	-jar "$AMQ_HOME/bin/activemq.jar" producer --brokerUrl "tcp://127.0.0.1:$port" \\
	--destination queue://syncshim.walkthrough --persistent true \\
	--messageCount $messages --parallelThreads $threads --messageSize 1024 > "\$SYNCSHIM_AB_DIR/\$side-\$SYNCSHIM_AB_ROUND.producer.out" 2>&1 &
producer=\$!
# While the producer runs: the broker's live view, its journal rule,
# calls/s, sync latency and data at risk (live = auto: on where a rule
# can acknowledge a sync early; the rule files here say on). synclat top
# -p PID is the interactive one.
sleep 1.5
"$dir/bin/synclat" top --once -p "\$SYNCSHIM_AB_SERVER_PID" 2>&1 | sed "s/^/\$name: /"
rc=0
wait \$producer || rc=\$?
p="\$SYNCSHIM_AB_DIR/\$side-\$SYNCSHIM_AB_ROUND.producer.out"
sent=\$(grep -c 'Produced: [0-9]* messages' "\$p")
ms=\$(sed -n 's/.*Elapsed time in milli second : \([0-9]*\).*/\1/p' "\$p" | sort -n | tail -1)
if [ "\$rc" != 0 ] || [ "\$sent" != $threads ] || [ -z "\$ms" ]; then
	echo "the producer failed (exit \$rc):"; tail -20 "\$p"; exit 1
fi
echo "\$name: broker on 127.0.0.1:$port, $threads x $messages persistent messages sent in \$ms ms"
echo "messages/s: \$(( $threads * $messages * 1000 / (ms > 0 ? ms : 1) ))"
EOF
chmod +x "$dir/load.sh"

# The two sides: one rule for the KahaDB journal (db-N.log), which only
# the policy tells apart; every other file of the broker is passthrough.
rule() { # SIDE SYNC [KEY = VALUE...]
	local side=$1 sync=$2
	shift 2
	{
		echo "[shim]"
		echo "policy = passthrough"
		echo "; both sides publish live counters (auto would on B only), so"
		echo "; the live view shows each and both pay the same for it"
		echo "live = on"
		echo
		echo "[rule journal]"
		echo "path = $dir/data/kahadb/db-*.log"
		echo "sync = $sync"
		for kv in "$@"; do echo "$kv"; done
	} > "$dir/$side.ini"
	"$dir/bin/syncshim" check "$dir/$side.ini" >/dev/null
}
rule passthrough passthrough
if [ -n "$side_b_ini" ]; then
	cp "$side_b_ini" "$dir/$policy.ini"
	"$dir/bin/syncshim" check "$dir/$policy.ini" >/dev/null
elif [ "$policy" = defer ]; then
	rule defer defer "max_delay_ms = $delay" "max_calls = 1000000"
else
	rule group group
fi
chmod -R a+rX "$dir"
[ ${#as_user[@]} = 0 ] || chown -R "$user:$group" "$dir"

broker=("$JAVA" -Xms64m -Xmx256m -XX:-UsePerfData -Djava.io.tmpdir="$dir/tmp"
	-Dactivemq.classpath="$dir/conf" -Dactivemq.home="$AMQ_HOME" -Dactivemq.base="$dir"
	-Dactivemq.conf="$dir/conf" -Dactivemq.data="$dir/data"
	-jar "$AMQ_HOME/bin/activemq.jar" start "xbean:file:$dir/activemq.xml")
service=(--setup "rm -rf '$dir/data'" --ready "tcp:127.0.0.1:$port" --timeout 90 --load "$dir/load.sh")

say "ActiveMQ $(unzip -p "$AMQ_HOME/bin/activemq.jar" META-INF/MANIFEST.MF 2>/dev/null |
	sed -n 's/^Implementation-Version: *\([^[:space:]]*\).*/\1/p') from $AMQ_HOME, in $dir${as_user:+, as ${user}}"

if [ -n "$profile" ]; then
	echo "load: $threads producer thread(s) x $messages persistent 1 KiB messages, once, under passthrough"
	say "syncshim profile -o $(basename "$profile") --ready tcp:127.0.0.1:$port --load load.sh -- java ... activemq.jar start"
	(cd "$dir" && timeout --kill-after=10 600 "${as_user[@]}" env HOME="$dir/home" \
		"$dir/bin/syncshim" profile -o "$dir/proposed.ini" -d "$dir/profile" "${service[@]}" -- "${broker[@]}")
	cp "$dir/proposed.ini" "$profile"
	echo "proposed rules: $profile"
	exit
fi

echo "A: the KahaDB journal under passthrough; B: $(if [ -n "$side_b_ini" ]; then echo "the rules of $side_b_ini"; else
	echo "under $policy ($(sed -n '/^sync = /,$p' "$dir/$policy.ini" | tr '\n' ' '))"; fi)"
echo "load: $threads producer thread(s) x $messages persistent 1 KiB messages, $rounds round(s) of A then B"

# syncshim ab runs the rounds, logs the broker's every call (-m calls)
# and compares. Its output goes through a pipe.
say "syncshim ab -n $rounds -m calls passthrough.ini $policy.ini --setup ... --ready tcp:127.0.0.1:$port --load load.sh --metric 'messages/s: N' -- java ... activemq.jar start"
set +e
(cd "$dir" && timeout --kill-after=10 900 "${as_user[@]}" env HOME="$dir/home" \
	"$dir/bin/syncshim" ab -n "$rounds" -m calls -o "$dir/ab" "$dir/passthrough.ini" "$dir/$policy.ini" \
	"${service[@]}" --metric 'messages/s: ([0-9]+)' -- "${broker[@]}" 2>&1) | cat > "$dir/ab.out"
ab_rc=${PIPESTATUS[0]}
set -e
for f in "$dir"/ab/[AB]-*.load.out; do
	[ -e "$f" ] && grep -h '^passthrough: \|^'"$policy"': ' "$f"
done
sed -n '/^round \|^the load\|^  [AB] (\|^  B\/A/p' "$dir/ab.out"
if [ "$ab_rc" != 0 ]; then
	cat "$dir/ab.out" >&2
	die "syncshim ab failed (exit $ab_rc)"
fi

# The journal's files alone: with log_mode = calls, synclat reports the
# sync latency of each file.
say "the journal (KahaDB db-N.log) alone, per side: synclat report --files"
for side in A B; do
	"$dir/bin/synclat" report --files "$dir"/ab/$side-*.log |
		awk -v side="$side" '/^files / { print "      " $0; next } NF >= 10 && /\/kahadb\/db-[0-9]+\.log$/ { printf "%-6s %s\n", side, $0 }'
done | awk '!seen[$0]++'

say "synclat compare: the broker's calls, A = passthrough, B = $policy"
# (The plots go with the directory unless it is kept: -k, -o DIR.)
sed -n '/^synclat compare$/,$p' "$dir/ab.out" | sed '1d' | { [ "$keep" = 1 ] && cat || grep -v '^plot: '; }
