#!/usr/bin/env bash
# check.sh DIR PORT ACKS [WINDOW_MS] - after a power cut, without any
# preload: the broker of DIR must start on the rolled-back KahaDB (its
# recovery replays the journal into the index), and a consumer must get
# back every acknowledged message (ACKS: "acked ID EPOCH_SECONDS") exactly
# once; with WINDOW_MS, every one acknowledged more than WINDOW_MS before
# the cut ($SYNCSHIM_CRASHTEST_CUT_REALTIME, which syncshim crashtest
# sets) may not be missing. A message delivered twice fails the trial
# whatever its age; one never acknowledged (the cut came before its send
# returned) may or may not be there.
# Prints "result: integrity=ok|failed acked=N consumed=N duplicates=N
# lost=N lost_oldest_ms=MS lost_beyond_window=N" (crash_campaign.sh's
# counters); exits 1 on any failure.
set -euo pipefail
unset LD_PRELOAD
here=$(cd "$(dirname "$0")" && pwd)
d=${1:?usage: check.sh DIR PORT ACKS [WINDOW_MS]}
port=${2:?usage: check.sh DIR PORT ACKS [WINDOW_MS]}
acks=${3:?usage: check.sh DIR PORT ACKS [WINDOW_MS]}
window=${4:-}
tmp=$(mktemp -d)
broker=""
stop_broker() {
	[ -n "$broker" ] || return 0
	kill -TERM "$broker" 2>/dev/null || true
	for ((i = 0; i < 300; i++)); do kill -0 "$broker" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$broker" 2>/dev/null || true
	wait "$broker" 2>/dev/null || true
	broker=""
}
trap 'stop_broker; rm -rf "$tmp"' EXIT
fail() {
	echo "check.sh: $d: $1"
	[ -z "${2:-}" ] || sed 's/^/  /' "$2" | tail -n 15
	echo "result: integrity=failed"
	exit 1
}
cp=$("$here/broker.sh" client "$d/classes")
"$here/broker.sh" start "$d" >"$d/check-broker.log" 2>&1 &
broker=$!
"$here/broker.sh" wait "$port" 120 2>"$tmp/wait.err" ||
	fail "the broker does not start on the rolled-back KahaDB:" "$d/check-broker.log"
java -Xmx128m -XX:-UsePerfData -cp "$cp" AmqLoad consume "tcp://127.0.0.1:$port" svc 3000 >"$tmp/ids" 2>"$tmp/consume.err" ||
	fail "the consumer failed:" "$tmp/consume.err"
stop_broker
consumed=$(wc -l <"$tmp/ids")
dups=$(sort -n "$tmp/ids" | uniq -d | wc -l)
[ -e "$acks" ] || acks=/dev/null # cut before the workload began
read -r acked lost beyond oldest < <(awk -v cut="${SYNCSHIM_CRASHTEST_CUT_REALTIME:-}" -v win="${window:-0}" '
	FNR == NR { have[$1] = 1; next }
	$1 == "acked" && NF >= 3 { n++; if (!($2 in have)) { lost++
		if (cut != "") { age = (cut - $3) * 1000; if (age > oldest) oldest = age; if (age > win) beyond++ } } }
	END { printf "%d %d %d %.1f\n", n, lost, beyond, oldest }' "$tmp/ids" "$acks")
verdict=ok
[ "$dups" = 0 ] || verdict=failed
echo "check.sh: $d: the broker recovered; $consumed messages consumed, $dups of them more than once;" \
	"$lost of $acked acknowledged missing${window:+, $beyond acknowledged more than $window ms before the cut}"
echo "result: integrity=$verdict acked=$acked consumed=$consumed duplicates=$dups lost=$lost lost_oldest_ms=$oldest lost_beyond_window=${window:+$beyond}"
[ "$verdict" = ok ] || exit 1
if [ -n "$window" ]; then [ "$beyond" -eq 0 ]; else [ "$lost" -eq 0 ]; fi
