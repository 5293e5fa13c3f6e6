#!/usr/bin/env bash
# broker.sh - Debian's ActiveMQ 5.17 broker in a directory of its own, for
# the benchmark's services section and the activemq power-cut campaign.
#
#   examples/activemq/broker.sh conf DIR PORT [STRATEGY]
#                                               writes DIR/activemq.xml and DIR/conf; STRATEGY:
#                                               KahaDB's journalDiskSyncStrategy (default
#                                               always: a sync per send; periodic: one a second)
#   examples/activemq/broker.sh start DIR       runs the broker in the foreground (exec java)
#   examples/activemq/broker.sh wait PORT [S]   returns once PORT accepts (default 60 s)
#   examples/activemq/broker.sh client OUTDIR   compiles AmqLoad.java into OUTDIR (javac, when
#                                               it is newer) and prints the classpath that runs it
#
# The broker: KahaDB in DIR/data/kahadb with its defaults (one journal
# sync per persistent send, sends that arrive together batched into one
# write), OpenWire on 127.0.0.1:PORT only, no JMX, no web console, logs to
# stdout. Put a wrapper in front of `start` to run the broker alone under
# it: `syncshim run -p defer -- broker.sh start DIR`, `eatmydata broker.sh
# start DIR`; the exec hands the wrapper's preload to the JVM.
set -euo pipefail
AMQ_HOME=${AMQ_HOME:-/usr/share/activemq}
JAVA=${JAVA:-java}
what=${1:?usage: broker.sh conf DIR PORT [STRATEGY] | start DIR | wait PORT [SECONDS] | client OUTDIR}

case $what in
conf)
	dir=${2:?usage: broker.sh conf DIR PORT}
	port=${3:?usage: broker.sh conf DIR PORT}
	strategy=${4:-always}
	mkdir -p "$dir/conf" "$dir/tmp" "$dir/data"
	cat >"$dir/activemq.xml" <<EOF
<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="svc"
          useJmx="false" persistent="true" dataDirectory="$dir/data">
    <persistenceAdapter><kahaDB directory="$dir/data/kahadb" journalDiskSyncStrategy="$strategy"/></persistenceAdapter>
    <systemUsage><systemUsage>
      <storeUsage><storeUsage limit="2 gb"/></storeUsage>
      <tempUsage><tempUsage limit="256 mb"/></tempUsage>
    </systemUsage></systemUsage>
    <transportConnectors>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:$port"/>
    </transportConnectors>
  </broker>
</beans>
EOF
	cat >"$dir/conf/log4j.properties" <<'EOF'
log4j.rootLogger=WARN, out
log4j.logger.org.apache.activemq.broker.BrokerService=INFO
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d{HH:mm:ss,SSS} %-5p %m%n
EOF
	;;
start)
	dir=${2:?usage: broker.sh start DIR}
	[ -r "$AMQ_HOME/bin/activemq.jar" ] || { echo "broker.sh: no ActiveMQ in $AMQ_HOME: apt-get install activemq" >&2; exit 2; }
	exec "$JAVA" -Xms128m -Xmx256m -XX:-UsePerfData -Djava.io.tmpdir="$dir/tmp" \
		-Dactivemq.classpath="$dir/conf" -Dactivemq.home="$AMQ_HOME" -Dactivemq.base="$dir" \
		-Dactivemq.conf="$dir/conf" -Dactivemq.data="$dir/data" \
		-jar "$AMQ_HOME/bin/activemq.jar" start "xbean:file:$dir/activemq.xml"
	;;
wait)
	port=${2:?usage: broker.sh wait PORT [SECONDS]}
	for ((i = 0; i < ${3:-60} * 5; i++)); do
		timeout 1 bash -c "echo >/dev/tcp/127.0.0.1/$port" 2>/dev/null && exit 0
		sleep 0.2
	done
	echo "broker.sh: nothing accepts on 127.0.0.1:$port after ${3:-60} s" >&2
	exit 1
	;;
client)
	# AmqLoad compiled into OUTDIR; prints the classpath that runs it.
	out=${2:?usage: broker.sh client OUTDIR}
	cp=/usr/share/java
	jars="$cp/activemq-client.jar:$cp/geronimo-jms_1.1_spec.jar:$cp/geronimo-j2ee-management-1.1-spec.jar:$cp/hawtbuf.jar:$cp/slf4j-api.jar:$cp/slf4j-nop.jar"
	here=$(cd "$(dirname "$0")" && pwd)
	mkdir -p "$out"
	if [ ! -e "$out/AmqLoad.class" ] || [ "$here/AmqLoad.java" -nt "$out/AmqLoad.class" ]; then
		javac -cp "$jars" -d "$out" "$here/AmqLoad.java" >&2
	fi
	echo "$out:$jars"
	;;
*)
	echo "broker.sh: conf, start, wait or client, not $what" >&2
	exit 2
	;;
esac
