#!/usr/bin/env bash
# bench-ha.sh: produce throughput and latency of one replica group with 0, 1
# and 2 followers, async and sync replication (docs/BENCHMARKS.md, "Replication").
#
# Every configuration runs TRIALS times, interleaved (trial 1 of every
# configuration, then trial 2, ...) so that a slow minute of the shared machine
# lands on all of them. Each trial starts a fresh group on loopback (node 1
# embeds NATS, the others join it), waits until every follower is in sync, then
# runs `unilog bench produce` twice against the leader: as fast as acknowledged
# (throughput; its latency is queueing) and at RATE records/s (latency). CPU is
# the user+system time of every broker process of the group over both runs,
# per GB produced. Prints one TSV line per run; summarize with bench-ha-table.
#
#   BIN=bin/unilog TRIALS=3 DURATION=5s scripts/bench-ha.sh > ha.tsv
set -euo pipefail

BIN=${BIN:-bin/unilog}
BENCH_BIN=${BENCH_BIN:-$BIN}
TRIALS=${TRIALS:-3}
DURATION=${DURATION:-5s}
RATE=${RATE:-5000}
SIZE=${SIZE:-1KiB}
PARTITIONS=${PARTITIONS:-8}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/unilog-bench-ha.XXXXXX")
BASE=${BASE:-29000}
CLK_TCK=$(getconf CLK_TCK)
pids=()

cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	pids=()
}
trap 'cleanup; rm -rf "$DIR"' EXIT

# cpu_ticks PID...: user+system clock ticks of the processes.
cpu_ticks() {
	local total=0 pid
	for pid in "$@"; do
		total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
	done
	echo "$total"
}

# status NODE: its admin /status.
status() { curl -sf "http://127.0.0.1:$((BASE + 40 + $1))/status" || true; }

# start_group FOLLOWERS MODE: one leader and FOLLOWERS followers.
start_group() {
	local followers=$1 mode=$2 i
	rm -rf "$DIR/group" && mkdir -p "$DIR/group"
	for i in $(seq 1 $((followers + 1))); do
		local nats=(--nats-listen "127.0.0.1:$((BASE + 22))")
		[ "$i" -gt 1 ] && nats=(--nats "nats://127.0.0.1:$((BASE + 22))")
		"$BIN" broker --data-dir "$DIR/group/n$i" --node-id "$i" --replica-group bench \
			--listen "127.0.0.1:$((BASE + i))" --admin "127.0.0.1:$((BASE + 40 + i))" \
			--replication-listen "127.0.0.1:$((BASE + 60 + i))" --replication "$mode" --min-insync "$((followers > 0 ? 2 : 1))" \
			"${nats[@]}" --cluster-secret-file "$DIR/group/cluster.secret" --file-size 256MiB >"$DIR/group/n$i.log" 2>&1 &
		pids+=($!)
		# Node 1 leads: the others start once it does.
		if [ "$i" -eq 1 ]; then
			until status 1 | grep -q '"role":"leader"'; do sleep 0.1; done
		fi
	done
	until [ "$(status 1 | jq '.in_sync // [] | length')" -eq "$followers" ]; do sleep 0.1; done
}

printf 'followers\tmode\ttrial\trun\trecords_per_s\tmb_per_s\tp50_ms\tp99_ms\tcpu_s_per_gb\n'
for trial in $(seq 1 "$TRIALS"); do
	for followers in 0 1 2; do
		for mode in async sync; do
			start_group "$followers" "$mode"
			before=$(cpu_ticks "${pids[@]}")
			bytes=0
			for run in max rate; do
				args=(--brokers "127.0.0.1:$((BASE + 1))" --topic "t-$run" --partitions "$PARTITIONS"
					--message-size "$SIZE" --duration "$DURATION" --acks -1 --json "$DIR/$run.json")
				[ "$run" = rate ] && args+=(--rate "$RATE")
				"$BENCH_BIN" bench produce "${args[@]}" >/dev/null
				bytes=$((bytes + $(jq .bytes "$DIR/$run.json")))
			done
			cpu=$(cpu_ticks "${pids[@]}")
			for run in max rate; do
				jq -r --arg f "$followers" --arg m "$mode" --arg t "$trial" --arg r "$run" \
					--argjson cpu "$(awk -v t=$((cpu - before)) -v hz="$CLK_TCK" -v b="$bytes" 'BEGIN{printf "%.2f", t / hz / (b / 1e9)}')" \
					'[$f, $m, $t, $r, (.records_per_s|floor), (.mb_per_s*10|floor/10), .p50_ms, .p99_ms, $cpu] | @tsv' "$DIR/$run.json"
			done
			cleanup
		done
	done
done
