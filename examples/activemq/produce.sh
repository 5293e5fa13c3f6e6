#!/usr/bin/env bash
# produce.sh DIR PORT ACKS - the workload of an ActiveMQ power-cut trial:
# the broker of DIR (broker.sh conf made it; whatever preload the caller
# runs under, syncshim crashtest's shim, comes along), then, once it
# accepts, AmqLoad's 8 producers sending persistent messages until the
# cut, each send's acknowledgement appended to ACKS ("acked ID
# EPOCH_SECONDS"; keep ACKS outside the crash test's scope).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
d=${1:?usage: produce.sh DIR PORT ACKS}
port=${2:?usage: produce.sh DIR PORT ACKS}
acks=${3:?usage: produce.sh DIR PORT ACKS}
: >"$acks"
cp=$("$here/broker.sh" client "$d/classes")
"$here/broker.sh" start "$d" >>"$d/broker.log" 2>&1 &
"$here/broker.sh" wait "$port" 120
java -Xmx128m -XX:-UsePerfData -cp "$cp" AmqLoad produce "tcp://127.0.0.1:$port" svc 8 1000000 "$acks"
