#!/usr/bin/env bash
# bench-move.sh: how long moving a partition of SIZE_TOTAL (1 GiB) between two
# replica groups takes, and what it costs the groups' produce throughput
# (docs/BENCHMARKS.md, "Partition moves").
#
# Starts two single-node replica groups on loopback (g1 embeds NATS, g2 joins
# it) and fills the one partition of topics "big-a" and "big-b" (both on g1)
# with SIZE_TOTAL of SIZE records each (acks=all). Then it moves big-a to g2
# with `unilog topic move` and nothing else running (the "idle" line), runs
# `unilog bench produce` on topic "load" (PARTITIONS partitions spread over
# both groups) for DURATION alone, and again with the move of big-b to g2
# started one second in. Prints one TSV line each; TRIALS repeats it all, on
# fresh groups.
#
#   BIN=bin/unilog TRIALS=3 scripts/bench-move.sh > move.tsv
set -euo pipefail

BIN=${BIN:-bin/unilog}
TRIALS=${TRIALS:-1}
DURATION=${DURATION:-20s}
SIZE=${SIZE:-1KiB}
SIZE_TOTAL=${SIZE_TOTAL:-1073741824}
PARTITIONS=${PARTITIONS:-4}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/unilog-bench-move.XXXXXX")
BASE=${BASE:-29100}
pids=()

cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	pids=()
}
trap 'cleanup; rm -rf "$DIR"' EXIT

status() { curl -sf "http://127.0.0.1:$((BASE + 40 + $1))/status" || true; }
bytes() { numfmt --from=auto "${1%B}" 2>/dev/null || echo "$1"; }

start_groups() {
	rm -rf "$DIR/c" && mkdir -p "$DIR/c"
	local i
	for i in 1 2; do
		local nats=(--nats-listen "127.0.0.1:$((BASE + 22))")
		[ "$i" -gt 1 ] && nats=(--nats "nats://127.0.0.1:$((BASE + 22))")
		"$BIN" broker --data-dir "$DIR/c/n$i" --node-id "$i" --replica-group "g$i" \
			--listen "127.0.0.1:$((BASE + i))" --admin "127.0.0.1:$((BASE + 40 + i))" \
			"${nats[@]}" --cluster-secret-file "$DIR/c/cluster.secret" --file-size 256MiB >"$DIR/c/n$i.log" 2>&1 &
		pids+=($!)
		until status "$i" | grep -q '"role":"leader"'; do sleep 0.1; done
	done
	# Topics are placed over the groups the creating node sees live.
	sleep 2
}

# move TOPIC: moves its partition 0 to g2 and prints the seconds it took.
move() {
	local start
	start=$(date +%s.%N)
	"$BIN" topic move --nats "nats://127.0.0.1:$((BASE + 22))" --cluster-secret-file "$DIR/c/cluster.secret" \
		--topic "$1" --partition 0 --to-group g2 >"$DIR/move-$1.out"
	printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)"
}

load() {
	"$BIN" bench produce --brokers "127.0.0.1:$((BASE + 1))" --topic load --partitions "$PARTITIONS" \
		--message-size "$SIZE" --duration "$DURATION" --acks -1 --json "$DIR/$1.json" >/dev/null
}

records=$(($(bytes "$SIZE_TOTAL") / $(bytes "$SIZE")))
printf 'trial\trun\trecords_per_s\tmb_per_s\tp50_ms\tp99_ms\tmove_s\n'
for trial in $(seq 1 "$TRIALS"); do
	start_groups
	for topic in big-a big-b; do
		"$BIN" bench produce --brokers "127.0.0.1:$((BASE + 1))" --topic "$topic" --partitions 1 \
			--message-size "$SIZE" --records "$records" --acks -1 --json "$DIR/fill.json" >/dev/null
	done
	printf '%s\tidle\t-\t-\t-\t-\t%s\n' "$trial" "$(move big-a)"
	load alone
	load during &
	loadpid=$!
	sleep 1
	move_s=$(move big-b)
	wait "$loadpid"
	for run in alone during; do
		m=-
		[ "$run" = during ] && m=$move_s
		jq -r --arg t "$trial" --arg r "$run" --arg m "$m" \
			'[$t, $r, (.records_per_s|floor), (.mb_per_s*10|floor/10), .p50_ms, .p99_ms, $m] | @tsv' "$DIR/$run.json"
	done
	cleanup
done
