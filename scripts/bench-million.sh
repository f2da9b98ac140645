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
# lease instead of the default 1.5 s, which a starved node lost. The CPU
# seconds of the `unilog produce` processes and of the broker during the
# first produce say which of the two bound it.
#
# The table goes to standard output (tab-separated); with MARKDOWN set
# (`make bench-million` sets docs/BENCHMARKS.md) it also replaces the
# section "A million partitions on one node: make bench-million" there,
# with the date, build, load averages and the median of the trials.
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
MARKDOWN=${MARKDOWN:-}
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
# cpu_s: the broker's user + system CPU seconds so far.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$pid/stat"; }
load=$(cut -d' ' -f1-3 /proc/loadavg)
printf 'trial\tpartitions\trecords\tproduce_s\trecords_per_s\tclient_cpu_s\tbroker_cpu_s\thwm_mib\trss_mib\tanon_mib\tclean_restart_s\tclean_rss_mib\tclean_anon_mib\tkill9_restart_s\tkill9_rss_mib\tkill9_anon_mib\n' | tee "$DIR/table.tsv"
for trial in $(seq 1 "$TRIALS"); do
	rm -rf "$DIR/data"
	start_broker
	until "$BIN" topic list --brokers "$LISTEN" --timeout 2s >/dev/null 2>&1; do sleep 0.1; done
	for t in $(seq 0 $((TOPICS - 1))); do
		"$BIN" topic create --brokers "$LISTEN" --topic "m$t" --partitions "$PARTITIONS" >/dev/null
	done
	start=$(now)
	broker_cpu=$(cpu_s)
	: >"$DIR/client.cpu"
	producers=()
	for t in $(seq 0 $((TOPICS - 1))); do
		/usr/bin/time -a -o "$DIR/client.cpu" -f '%U %S' "$BIN" produce --brokers "$LISTEN" --topic "m$t" --parse-key --timeout 5m \
			--file "$DIR/records.m$t" 2>>"$DIR/produce.log" &
		producers+=($!)
		if [ "${#producers[@]}" -ge "$PARALLEL" ]; then
			for job in "${producers[@]}"; do wait "$job"; done
			producers=()
		fi
	done
	for job in "${producers[@]}"; do wait "$job"; done
	produce_s=$(since "$start")
	broker_cpu=$(printf '%.2f' "$(echo "$(cpu_s) - $broker_cpu" | bc)")
	client_cpu=$(awk '{ s += $1 + $2 } END { printf "%.2f", s }' "$DIR/client.cpu")
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
	printf "%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t$rss\t$clean\t$kill9\n" "$trial" $((TOPICS * PARTITIONS)) $((TOPICS * RECORDS)) \
		"$produce_s" "$(echo "$TOPICS * $RECORDS / $produce_s" | bc -l)" "$client_cpu" "$broker_cpu" "$hwm" | tee -a "$DIR/table.tsv"
done
[ -z "$MARKDOWN" ] && exit 0

# The section: a line per trial, then each column's median.
rows() { # FILE: the table's Markdown rows, RSS and its anonymous part in one cell
	awk -F'\t' 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s (%s) | %s | %s (%s) | %s | %s (%s) |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16 }' "$1"
}
{
	echo "# A million partitions on one node: make bench-million"
	echo
	echo "Generated by \`make bench-million\` (scripts/bench-million.sh; the method is in \"A million partitions"
	echo "on one node (issue 19)\") on $(date -u '+%Y-%m-%d %H:%M') UTC at $(git rev-parse --short HEAD 2>/dev/null || echo 'an unknown commit'):"
	echo "TOPICS=$TOPICS x PARTITIONS=$PARTITIONS, RECORDS=$RECORDS per topic, PARALLEL=$PARALLEL, load average $load at the"
	echo "start and $(cut -d' ' -f1-3 /proc/loadavg) at the end. Goals (issue 19): first produce ≥ 100k records/s, VmHWM ≤ 2 GB,"
	echo "restart to serving < 5 s clean and after kill -9. CPU s: of the \`unilog produce\` processes and of the broker"
	echo "during the first produce; on 2 cores the larger binds it."
	echo
	echo "| trial | partitions | records | first produce s | records/s | client CPU s | broker CPU s | VmHWM MiB | RSS (anon) MiB after produce | clean restart s | RSS (anon) MiB then | kill -9 restart s | RSS (anon) MiB then |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	rows "$DIR/table.tsv"
	if [ "$TRIALS" -gt 1 ]; then
		median="median"
		for col in $(seq 2 16); do
			median="$median\t$(awk -F'\t' -v c="$col" 'NR > 1 { print $c }' "$DIR/table.tsv" | sort -g |
				awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
		done
		printf 'header\n%b\n' "$median" >"$DIR/median.tsv"
		rows "$DIR/median.tsv" | sed 's/^| median/| **median**/'
	fi
} | "$PROBE" bench section --markdown "$MARKDOWN"
