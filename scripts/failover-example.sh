#!/usr/bin/env bash
# failover-example.sh: docs/CLUSTER.md's "One replicated replica group" example,
# word for word (three nodes of replica group main on one machine, their
# embedded NATS servers routed into one JetStream cluster), then ROUNDS
# failovers of it (docs/BENCHMARKS.md, "Failover"). Each round sends the
# leader (or with TARGET=follower each follower in turn, and its NATS server with it)
# SIGNAL (KILL, or TERM for a graceful stop), times from the signal to
# the first produce through a survivor that is acknowledged (`unilog
# produce`, acks=all, which retries until the new leader answers, process
# start included), restarts the old leader with docs/CLUSTER.md's command and
# waits until both followers are in sync again. Prints each round and
# min/median/max.
#
# Run as root it runs in a network namespace of its own, so the example's
# fixed ports cannot clash with anything else on the machine.
#
#   BIN=bin/unilog ROUNDS=10 SIGNAL=KILL TARGET=leader scripts/failover-example.sh
set -euo pipefail

BIN=$(realpath "${BIN:-bin/unilog}")
ROUNDS=${ROUNDS:-10}
SIGNAL=${SIGNAL:-KILL}
TARGET=${TARGET:-leader}

if [ "$(id -u)" = 0 ] && [ -z "${FAILOVER_EXAMPLE_NETNS:-}" ] && command -v ip >/dev/null; then
	ns=unilog-example-$$
	ip netns add "$ns"
	trap 'ip netns del "$ns"' EXIT
	ip -n "$ns" link set lo up
	FAILOVER_EXAMPLE_NETNS=$ns ip netns exec "$ns" "$0" "$@"
	exit
fi

export PATH=$(dirname "$BIN"):$PATH
DIR=$(mktemp -d "${TMPDIR:-/tmp}/unilog-failover-example.XXXXXX")
cd "$DIR"
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	cd / && rm -rf "$DIR"
}
trap cleanup EXIT

# start i: node i as docs/CLUSTER.md starts it.
R=nats-route://127.0.0.1:6232,nats-route://127.0.0.1:6233,nats-route://127.0.0.1:6234
start() {
	local i=$1
	unilog broker --data-dir ./node$i --listen 127.0.0.1:909$i --admin 127.0.0.1:964$i \
		--node-id $i --replica-group main --replication-listen 127.0.0.1:919$i \
		--nats-listen 127.0.0.1:423$((i+1)) --nats-cluster-listen 127.0.0.1:623$((i+1)) --nats-routes $R \
		--cluster-secret-file ./cluster.secret >>node$i.log 2>&1 &
	pids[$i]=$!
}

status() { unilog cluster status --nats nats://127.0.0.1:4232 --cluster-secret-file ./cluster.secret 2>/dev/null; }

# group: "LEADER EPOCH IN-SYNC..." of group main, from the GROUP table.
# A status call can fail while node 1's NATS server restarts: it is tried
# for up to 5 s, or a round would end the script with no word (set -e).
group() {
	local g
	for _ in $(seq 1 50); do
		g=$(status | awk '$1=="main"{$1=""; print}')
		if [ -n "$g" ]; then echo "$g"; return; fi
		sleep 0.1
	done
	echo "unilog cluster status named no leader of group main for 5 s" >&2
}

# wait_in_sync: until a leader lists both followers in sync.
wait_in_sync() {
	local until=$((SECONDS + 60))
	while [ $SECONDS -lt $until ]; do
		if [ "$(group | wc -w)" = 4 ]; then return; fi
		sleep 0.1
	done
	echo "no leader with both followers in sync after 60 s" >&2
	exit 1
}

now() { date +%s.%N; }

for i in 1 2 3; do start $i; done
wait_in_sync
unilog topic create --brokers 127.0.0.1:9092 --topic orders --partitions 6 >/dev/null
seq 1 12 | unilog produce --brokers 127.0.0.1:9091 --topic orders 2>/dev/null
read -r L E _ <<<"$(group)"
echo "node $L leads epoch $E at the start"

times=()
next=13
for round in $(seq 1 "$ROUNDS"); do
	read -r L E _ <<<"$(group)"
	# V is the node the signal goes to, S a survivor to produce through.
	V=$L S=$((L % 3 + 1))
	# Followers in turn: the same one every round would find the NATS
	# streams' leaders gone from its server after the first.
	if [ "$TARGET" = follower ]; then V=$(((L + round % 2) % 3 + 1)) S=$L; fi
	t0=$(now)
	kill -"$SIGNAL" "${pids[$V]}"
	out=$(seq $next $((next + 11)) | unilog produce --brokers 127.0.0.1:909$S --topic orders 2>&1)
	t1=$(now)
	case $out in *"records=12 "*"errors=0"*) ;; *) echo "round $round: produce failed: $out" >&2; exit 1 ;; esac
	next=$((next + 12))
	took=$(echo "$t1 - $t0" | bc)
	times+=("$took")
	wait "${pids[$V]}" 2>/dev/null || true
	start "$V"
	wait_in_sync
	read -r L2 E2 _ <<<"$(group)"
	printf 'round %d: SIG%s %s node %d (epoch %d): produce through node %d acknowledged %.3f s later; node %d leads epoch %d\n' \
		"$round" "$SIGNAL" "$TARGET" "$V" "$E" "$S" "$took" "$L2" "$E2"
done

timeout 30 unilog consume --brokers 127.0.0.1:9091 --topic orders 2>/dev/null | sort -n >consumed || true
if seq 1 $((next - 1)) | cmp -s - consumed; then
	echo "read back: records 1 to $((next - 1)), each once"
else
	echo "read back: $(wc -l <consumed) records, $(uniq consumed | wc -l) distinct; want 1 to $((next - 1)) once each" >&2
	exit 1
fi
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "SIG'"$SIGNAL"' of the '"$TARGET"' over %d rounds: min %.3f s, median %.3f s, max %.3f s\n", NR, a[1], a[int((NR+1)/2)], a[NR]}'
