#!/usr/bin/env bash
# bench-million.sh: the 1,000,000-partition row of docs/BENCHMARKS.md
# ("A million partitions on one node").
#
# Starts one broker on a fresh data directory, creates TOPICS topics of
# PARTITIONS partitions each (default 10 x 100,000), and produces RECORDS
# keyed records per topic (`key-N<TAB>value N`, murmur2 over the partitions,
# acks=all) with `unilog produce --parse-key`, PARALLEL topics at a time. It
# reads the broker's RSS (VmHWM, the peak, and VmRSS once produce has
# settled, and RssAnon, the heap without the mapped files), then restarts the broker twice on the same directory: after a
# clean stop (SIGTERM) and after SIGKILL. A restart's time runs from the
# broker's exec to the first successful Metadata + Fetch of a record
# (`unilog bench serving` of partition 0 of the first topic), and the RSS
# after it is read once that answered. TRIALS repeats it all on a fresh
# directory; one table line per trial. The broker runs with a LEASE (30 s)
# lease instead of the default 1.5 s, which a starved node lost.
#
#   BIN=bin/unilog scripts/bench-million.sh
#   make bench-million TRIALS=3
set -euo pipefail

BIN=${BIN:-bin/unilog}
# PROBE is the unilog whose `bench serving` times restarts, so that a build
# older than that command can be measured (BIN=old PROBE=bin/unilog).
PROBE=${PROBE:-$BIN}
TOPICS=${TOPICS:-10}
PARTITIONS=${PARTITIONS:-100000}
RECORDS=${RECORDS:-200000}
PARALLEL=${PARALLEL:-1}
TRIALS=${TRIALS:-1}
# One node has no one to fail over to; the default 1.5 s lease made it step
# down (and produce stall) whenever other work starved it of CPU for a second.
LEASE=${LEASE:-30s}
BASE=${BASE:-29300}
KEEP=${KEEP:-}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
DIR=$(mktemp -d "$BENCH_DIR/unilog-bench-million.XXXXXX")
LISTEN=127.0.0.1:$((BASE + 1))
ADMIN=127.0.0.1:$((BASE + 2))
pid=

producers=()
cleanup() {
	for job in "${producers[@]}"; do kill "$job" 2>/dev/null || true; done
	if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	if [ -z "$KEEP" ]; then rm -rf "$DIR"; else echo "kept $DIR" >&2; fi
}
trap cleanup EXIT

now() { date +%s.%N; }
since() { printf '%.2f' "$(echo "$(now) - $1" | bc)"; }
# kib FIELD: a /proc/PID/status field of the broker in KiB.
kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/$pid/status"; }
mib() { printf '%.0f' "$(echo "$(kib "$1") / 1024" | bc -l)"; }

start_broker() {
	"$BIN" broker --data-dir "$DIR/data" --listen "$LISTEN" --admin "$ADMIN" --admin-pprof \
		--nats-listen "127.0.0.1:$((BASE + 3))" --file-size 1GiB --lease-duration "$LEASE" >>"$DIR/broker.log" 2>&1 &
	pid=$!
}

# serving: waits for Metadata + Fetch of one record (`unilog bench serving`
# retries until the broker answers; `unilog consume` would list the offsets
# of all 100,000 partitions of the topic first).
serving() {
	"$PROBE" bench serving --brokers "$LISTEN" --topic m0 --partition 0 --timeout 10m >/dev/null ||
		{ echo "bench-million: broker not serving, see $DIR/broker.log" >&2; exit 1; }
}

stop_broker() { # SIGNAL
	kill "-$1" "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}

restart() { # SIGNAL: sets restart_s, seconds to serving, and restart_rss, MiB then
	stop_broker "$1"
	local start
	start=$(now)
	start_broker
	serving
	restart_s=$(since "$start")
	restart_rss="$(mib VmRSS)\t$(mib RssAnon)"
}

awk -v topics="$TOPICS" -v n="$RECORDS" -v dir="$DIR" 'BEGIN {
	for (t = 0; t < topics; t++) for (i = t * n; i < (t + 1) * n; i++) printf "key-%d\tvalue %d\n", i, i >(dir "/records.m" t)
}'
printf 'trial\tpartitions\trecords\tproduce_s\trecords_per_s\thwm_mib\trss_mib\tanon_mib\tclean_restart_s\tclean_rss_mib\tclean_anon_mib\tkill9_restart_s\tkill9_rss_mib\tkill9_anon_mib\n'
for trial in $(seq 1 "$TRIALS"); do
	rm -rf "$DIR/data"
	start_broker
	until "$BIN" topic list --brokers "$LISTEN" --timeout 2s >/dev/null 2>&1; do sleep 0.1; done
	for t in $(seq 0 $((TOPICS - 1))); do
		"$BIN" topic create --brokers "$LISTEN" --topic "m$t" --partitions "$PARTITIONS" >/dev/null
	done
	start=$(now)
	producers=()
	for t in $(seq 0 $((TOPICS - 1))); do
		"$BIN" produce --brokers "$LISTEN" --topic "m$t" --parse-key --timeout 5m \
			--file "$DIR/records.m$t" 2>>"$DIR/produce.log" &
		producers+=($!)
		if [ "${#producers[@]}" -ge "$PARALLEL" ]; then
			for job in "${producers[@]}"; do wait "$job"; done
			producers=()
		fi
	done
	for job in "${producers[@]}"; do wait "$job"; done
	produce_s=$(since "$start")
	# The sentinel the restarts read back; partition 0 may have no keyed record.
	echo "sentinel" | "$BIN" produce --brokers "$LISTEN" --topic m0 --partition 0 2>>"$DIR/produce.log"
	sleep 5
	hwm=$(mib VmHWM)
	rss="$(mib VmRSS)\t$(mib RssAnon)"
	restart TERM
	clean="$restart_s\t$restart_rss"
	restart KILL
	kill9="$restart_s\t$restart_rss"
	stop_broker TERM
	printf "%s\t%s\t%s\t%s\t%.0f\t%s\t$rss\t$clean\t$kill9\n" "$trial" $((TOPICS * PARTITIONS)) $((TOPICS * RECORDS)) \
		"$produce_s" "$(echo "$TOPICS * $RECORDS / $produce_s" | bc -l)" "$hwm"
done
