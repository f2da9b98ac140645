#!/usr/bin/env bash
# compat.sh: other clients' own tests against unilog, as a user would point
# them at Kafka (issue 16, `make compat`). Prints one table row per test, flush
# mode and run: PASS, FAIL or SKIP, seconds, and the first failure line.
#
# 1. franz-go's pkg/kgo integration tests. The franz-go module of go.mod (or
#    COMPAT_FRANZ_VERSION) is fetched with `go mod download`, copied out of the
#    read-only module cache into COMPAT_CACHE and its pkg/kgo tests compiled
#    once. Each test then runs in its own process (a hang times out alone and
#    the seconds are the test's) with KGO_SEEDS pointing at the broker,
#    KGO_TEST_RF=1 and KGO_TEST_RECORDS=COMPAT_RECORDS.
# 2. kafka-python (Debian's python3-kafka) and KafkaJS (npm, installed into
#    COMPAT_CACHE): scripts/compat/*: create a topic, produce with acks=all,
#    consume it all in a group, check the committed offsets, delete the topic;
#    and KafkaJS's transactional producer (kafkajs_txn.js): committed and
#    aborted transactions with offsets, read back by a read_committed group.
#
# Each flush mode of COMPAT_FLUSH gets a fresh `unilog broker` on a fresh data
# directory and free loopback ports; COMPAT_SEEDS=host:port skips starting one
# and runs everything once against that broker (flush column "external").
# Exits 1 when any test failed. Every output is kept under COMPAT_OUT.
#
#   COMPAT_TESTS=TestGroupETL COMPAT_RUNS=3 COMPAT_FLUSH=sync scripts/compat.sh
#
# COMPAT_TESTS is a space-separated list of kgo test names, or "named" (the
# tests issue 16 names, the default) or "broker" (every test of pkg/kgo that
# talks to a broker, found in its sources); COMPAT_CLIENTS picks among
# "kgo kafka-python kafkajs".
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${BIN:-bin/unilog}
COMPAT_FLUSH=${COMPAT_FLUSH:-sync async}
COMPAT_TESTS=${COMPAT_TESTS:-named}
COMPAT_CLIENTS=${COMPAT_CLIENTS:-kgo kafka-python kafkajs}
COMPAT_RUNS=${COMPAT_RUNS:-1}
COMPAT_RECORDS=${COMPAT_RECORDS:-500000}
COMPAT_TIMEOUT=${COMPAT_TIMEOUT:-4m}
COMPAT_SEEDS=${COMPAT_SEEDS:-}
COMPAT_CACHE=${COMPAT_CACHE:-$ROOT/bin/compat}
COMPAT_FRANZ_VERSION=${COMPAT_FRANZ_VERSION:-$(go list -m -f '{{.Version}}' github.com/twmb/franz-go)}
COMPAT_KAFKAJS_VERSION=${COMPAT_KAFKAJS_VERSION:-2.2.4}
COMPAT_OUT=${COMPAT_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/unilog-compat.XXXXXX")}
# Debian's python3-kafka installs for Debian's interpreter, whatever python3
# comes first on PATH.
PYTHON=${PYTHON:-/usr/bin/python3}

NAMED="TestGroupETL TestTxnEtl TestClient_ProduceLargeMessages TestIssueFetchLargerThanBrokerMaxReadBytes TestConsumeRegex"

mkdir -p "$COMPAT_OUT" "$COMPAT_CACHE"
ROWS=$COMPAT_OUT/rows.tsv
: >"$ROWS"
broker_pid=

log() { echo "compat: $*" >&2; }

stop_broker() {
	if [ -n "$broker_pid" ]; then
		kill -TERM "$broker_pid" 2>/dev/null
		wait "$broker_pid" 2>/dev/null
		broker_pid=
	fi
}
trap stop_broker EXIT

# start_broker FLUSH: a fresh broker on free ports; sets seeds.
start_broker() {
	local flush=$1 data=$COMPAT_OUT/data-$1 blog=$COMPAT_OUT/broker-$1.log
	rm -rf "$data"
	"$BIN" broker --data-dir "$data" --flush "$flush" --listen 127.0.0.1:0 \
		--admin "" --nats-listen 127.0.0.1:0 >"$blog" 2>&1 &
	broker_pid=$!
	seeds=
	for _ in $(seq 1 300); do
		seeds=$(sed -n 's/^unilog broker listening on \([^ ]*\) .*/\1/p' "$blog")
		[ -n "$seeds" ] && return 0
		kill -0 "$broker_pid" 2>/dev/null || break
		sleep 0.1
	done
	log "broker --flush $flush did not start; $blog:"
	tail -5 "$blog" >&2
	return 1
}

broker_alive() { [ -z "$broker_pid" ] || kill -0 "$broker_pid" 2>/dev/null; }

# row NAME FLUSH RESULT SECONDS FIRST-LINE: the kgo tests name topics and
# groups by 64-digit hashes, shortened here to leave the line room to say why.
row() {
	local why
	why=$(printf '%s' "$5" | tr '\t\n' '  ' | sed -E 's/([0-9a-f]{8})[0-9a-f]{56}/\1.../g' | cut -c1-300)
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$why" >>"$ROWS"
	printf 'compat: %-45s %-8s %-4s %5ss %s\n' "$1" "$2" "$3" "$4" "$why" >&2
}

# kgo_build: compile franz-go's pkg/kgo tests once per version into KGO_TEST.
kgo_build() {
	KGO_SRC=$COMPAT_CACHE/franz-go@$COMPAT_FRANZ_VERSION
	KGO_TEST=$COMPAT_CACHE/kgo@$COMPAT_FRANZ_VERSION.test
	[ -x "$KGO_TEST" ] && return 0
	local dir
	dir=$(go mod download -json "github.com/twmb/franz-go@$COMPAT_FRANZ_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	if [ -z "$dir" ]; then
		log "go mod download github.com/twmb/franz-go@$COMPAT_FRANZ_VERSION gave no directory"
		return 1
	fi
	rm -rf "$KGO_SRC"
	cp -r "$dir" "$KGO_SRC" && chmod -R u+w "$KGO_SRC" || return 1
	log "compiling franz-go $COMPAT_FRANZ_VERSION pkg/kgo tests"
	(cd "$KGO_SRC/pkg/kgo" && GOWORK=off go test -c -o "$KGO_TEST" .)
}

# kgo_broker_tests: the pkg/kgo tests that talk to a broker: those whose body
# makes a test client or topic (the others are unit tests or use kfake alone).
kgo_broker_tests() {
	awk '/^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name) }
		/^}/ { name = "" }
		name != "" && /newTestClient\(|adm\(\)|tmpTopic|tmpNamedTopic/ { print name; name = "" }' \
		"$KGO_SRC"/pkg/kgo/*_test.go
}

# test_lines LOG: what the test said through t.Log, t.Error and t.Skip,
# less the progress lines the kgo tests log as they go.
test_lines() {
	grep -E '^[[:space:]]+[A-Za-z0-9_]+\.go:[0-9]+: ' "$1" |
		grep -vE 'completed in|deleting (group|topic)|NOT DELETING' | sed 's/^[[:space:]]*//'
}

# first_failure LOG: the line that says why a test failed.
first_failure() {
	local line last warned
	line=$(test_lines "$1" | grep -v 'does not support' | head -1)
	if grep -q '^panic: test timed out' "$1"; then
		# The client retried until the timeout: the last error it logged says
		# what it was waiting for.
		last=$(grep -oE 'err: [A-Z_]+[^;,]*' "$1" | tail -1 | sed 's/^err: //')
		line="$(grep -m1 '^panic: test timed out' "$1")${last:+ (last client error: $last)}${line:+; first: $line}"
	fi
	[ -z "$line" ] && line=$(grep -m1 -E '^panic:|^--- FAIL' "$1")
	# The Kafka errors in the client's warnings, which often say why (say
	# OFFSET_OUT_OF_RANGE before a "lost records" reset).
	warned=$(grep -E '^\[[^]]*\]\[(WARN|ERROR)\]' "$1" | grep -oE '\b[A-Z][A-Z_]{5,}\b' |
		sort | uniq -c | sort -rn | head -3 | awk '{ printf "%s%s x%d", sep, $2, $1; sep = ", " }')
	line="${line:-exit status without a failure line: see $1}${warned:+ [client warned: $warned]}"
	printf '%s' "$line"
}

# run_kgo TEST FLUSH RUN
run_kgo() {
	local t=$1 flush=$2 n=$3 out=$COMPAT_OUT/$1-$2-$3.log start rc result line
	start=$(date +%s)
	(cd "$KGO_SRC/pkg/kgo" && KGO_SEEDS=$seeds KGO_TEST_RF=1 KGO_TEST_RECORDS=$COMPAT_RECORDS \
		"$KGO_TEST" -test.run "^$t\$" -test.v -test.count 1 -test.timeout "$COMPAT_TIMEOUT") >"$out" 2>&1
	rc=$?
	line=
	if [ $rc -eq 0 ] && grep -q "^--- SKIP: $t " "$out"; then
		result=SKIP
		line=$(test_lines "$out" | head -1)
	elif [ $rc -eq 0 ] && grep -q "^--- PASS: $t " "$out"; then
		result=PASS
	else
		result=FAIL
		line=$(first_failure "$out")
	fi
	row "$t" "$flush" "$result" $(($(date +%s) - start)) "$line"
}

# run_client NAME FLUSH RUN COMMAND...: a client scenario that prints "ok: ..."
# or "fail: ..." and exits 0 or 1.
run_client() {
	local name=$1 flush=$2 n=$3 out=$COMPAT_OUT/$1-$2-$3.log start rc line
	shift 3
	start=$(date +%s)
	timeout -k 10 300 "$@" >"$out" 2>&1
	rc=$?
	line=$(grep -m1 -E '^(ok|fail): ' "$out")
	if [ $rc -eq 0 ]; then
		row "$name" "$flush" PASS $(($(date +%s) - start)) ""
	else
		[ -z "$line" ] && line="exit $rc: $(grep -m1 -iE 'error' "$out")"
		row "$name" "$flush" FAIL $(($(date +%s) - start)) "$line"
	fi
}

# Set up each client; a client that cannot be had is one row saying why.
clients=
setup_failed=()
for c in $COMPAT_CLIENTS; do
	case $c in
	kgo)
		if kgo_build; then clients="$clients kgo"; else setup_failed+=("kgo: franz-go $COMPAT_FRANZ_VERSION tests did not compile"); fi ;;
	kafka-python)
		if "$PYTHON" -c 'import kafka' 2>/dev/null; then clients="$clients kafka-python"
		else setup_failed+=("kafka-python: $PYTHON cannot import kafka (apt-get install python3-kafka; make compat-deps)"); fi ;;
	kafkajs)
		KAFKAJS_DIR=$COMPAT_CACHE/kafkajs@$COMPAT_KAFKAJS_VERSION
		if [ ! -d "$KAFKAJS_DIR/node_modules/kafkajs" ] && command -v npm >/dev/null; then
			mkdir -p "$KAFKAJS_DIR"
			(cd "$KAFKAJS_DIR" && npm install --no-save --no-audit --no-fund "kafkajs@$COMPAT_KAFKAJS_VERSION") >"$COMPAT_OUT/npm.log" 2>&1
		fi
		if [ -d "$KAFKAJS_DIR/node_modules/kafkajs" ] && command -v node >/dev/null; then clients="$clients kafkajs"
		else setup_failed+=("kafkajs: kafkajs@$COMPAT_KAFKAJS_VERSION not installable (npm: $(tail -1 "$COMPAT_OUT/npm.log" 2>/dev/null))"); fi ;;
	*) setup_failed+=("$c: unknown client (kgo, kafka-python, kafkajs)") ;;
	esac
done
for f in "${setup_failed[@]}"; do row "${f%%:*}" - FAIL 0 "${f#*: }"; done

tests=
if [[ " $clients " == *" kgo "* ]]; then
	case $COMPAT_TESTS in
	named) tests=$NAMED ;;
	broker) tests=$(kgo_broker_tests | tr '\n' ' ') ;;
	*) tests=$COMPAT_TESTS ;;
	esac
	others=$(kgo_broker_tests | grep -vxF -f <(tr ' ' '\n' <<<"$tests" | grep .) | tr '\n' ' ')
	log "franz-go $COMPAT_FRANZ_VERSION pkg/kgo: running $tests"
	[ -n "$others" ] && log "its other broker-facing tests (COMPAT_TESTS=broker runs them too): $others"
fi

if [ -n "$COMPAT_SEEDS" ]; then
	modes=external
else
	[ -x "$BIN" ] || { log "$BIN missing: make build"; exit 1; }
	modes=$COMPAT_FLUSH
fi
log "outputs in $COMPAT_OUT"

for flush in $modes; do
	if [ "$flush" = external ]; then
		seeds=$COMPAT_SEEDS
	elif ! start_broker "$flush"; then
		row unilog-broker "$flush" FAIL 0 "did not start: $(tail -1 "$COMPAT_OUT/broker-$flush.log")"
		continue
	fi
	log "broker --flush $flush at $seeds"
	for n in $(seq 1 "$COMPAT_RUNS"); do
		for t in $tests; do
			broker_alive || break 2
			run_kgo "$t" "$flush" "$n"
		done
		for c in $clients; do
			broker_alive || break 2
			case $c in
			kafka-python) run_client kafka-python "$flush" "$n" "$PYTHON" scripts/compat/kafka_python.py "$seeds" ;;
			kafkajs)
				run_client kafkajs "$flush" "$n" env NODE_PATH="$KAFKAJS_DIR/node_modules" node scripts/compat/kafkajs.js "$seeds"
				run_client kafkajs-txn "$flush" "$n" env NODE_PATH="$KAFKAJS_DIR/node_modules" node scripts/compat/kafkajs_txn.js "$seeds" ;;
			esac
		done
	done
	if ! broker_alive; then
		row unilog-broker "$flush" FAIL 0 "broker exited: $(tail -1 "$COMPAT_OUT/broker-$flush.log")"
		broker_pid=
	fi
	stop_broker
	if [ "$flush" != external ]; then
		# Its commit log files are 1 GiB each: the logs are what a reader needs.
		rm -rf "$COMPAT_OUT/data-$flush"
		# The broker's warnings and errors, and the line issue 16 saw after its
		# own deletes, most frequent first, messages only.
		grep -E 'level=(warning|error|fatal|panic)|by another node' "$COMPAT_OUT/broker-$flush.log" |
			sed -n 's/.*msg="\([^"]*\)".*/\1/p' | sort | uniq -c | sort -rn | head -5 >"$COMPAT_OUT/broker-$flush.warnings"
		if [ -s "$COMPAT_OUT/broker-$flush.warnings" ]; then
			log "broker --flush $flush warnings and errors (count, message):"
			sed 's/^/compat:   /' "$COMPAT_OUT/broker-$flush.warnings" >&2
		fi
	fi
done

echo "| test | flush | result | seconds | first failure line |"
echo "| --- | --- | --- | --- | --- |"
awk -F'\t' '{ gsub(/\|/, "\\|", $5); printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }' "$ROWS"
pass=$(awk -F'\t' '$3 == "PASS"' "$ROWS" | wc -l)
fail=$(awk -F'\t' '$3 == "FAIL"' "$ROWS" | wc -l)
skip=$(awk -F'\t' '$3 == "SKIP"' "$ROWS" | wc -l)
echo
echo "compat: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
