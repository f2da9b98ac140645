GO       ?= go
BIN      ?= bin/unilog
DATA_DIR ?= ./data
LISTEN   ?= 127.0.0.1:9092
ADMIN    ?= 127.0.0.1:9644
GOFILES   = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './vendor/*')

.PHONY: all build run test test-deps vendor-uplot bench-console lint fuzz bench bench-report bench-million soak soak-ha compat compat-deps clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/unilog

## run: start one broker on $(DATA_DIR)
run: build
	./$(BIN) broker --data-dir $(DATA_DIR) --listen $(LISTEN) --admin $(ADMIN)

## test-deps: install what the tests need on a fresh machine: kcat, and
## Debian's Chromium with its driver for the console's browser tests
test-deps:
	@command -v kcat >/dev/null 2>&1 || { \
		echo "installing kcat"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat) >/dev/null; }
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || { \
		echo "installing chromium and chromium-driver"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >/dev/null; }

## bench-console: how long each console page takes in Chromium against a
## broker holding one topic of CONSOLE_PARTITIONS partitions (records and a
## group in it), and the broker's CPU while a page stays open; prints the
## tables of docs/BENCHMARKS.md "The console at 50,000 partitions". About
## 4 minutes, most of it the five 30 s CPU windows.
CONSOLE_PARTITIONS ?= 50000

bench-console: test-deps
	UNILOG_CONSOLE_BENCH=$(CONSOLE_PARTITIONS) $(GO) test -count=1 -v -timeout 30m -run '^TestConsoleLoadAtScale$$' ./cmd/unilog | grep -E '^ +console_bench_test.go' | sed 's/^ *console_bench_test.go:[0-9]*: //'

## vendor-uplot: re-vendor the console's chart library (uPlot, MIT) from the
## npm registry at UPLOT_VERSION into console/assets/uplot, with its license
## and version; the console embeds it, so nothing is fetched at run time
UPLOT_VERSION ?= 1.6.32

vendor-uplot:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
		(cd $$tmp && npm pack --silent uplot@$(UPLOT_VERSION) >/dev/null && tar xzf uplot-$(UPLOT_VERSION).tgz); \
		cp $$tmp/package/dist/uPlot.iife.min.js $$tmp/package/dist/uPlot.min.css $$tmp/package/LICENSE console/assets/uplot/; \
		echo $(UPLOT_VERSION) > console/assets/uplot/VERSION; \
		echo "vendored uPlot $(UPLOT_VERSION) into console/assets/uplot"

## test: lint, every test under the race detector, then a short pass of
## every fuzz target (FUZZTIME_CI executions each). The budget is a count, not
## a duration: a duration -fuzztime can fail with a bare "context deadline
## exceeded" and no crasher when the deadline races a busy worker (a bug in
## Go's fuzz coordinator, go.dev/issue/75804, fixed in Go 1.27). A count has
## no deadline. FUZZMINIMIZE_CI bounds the minimising of each new interesting
## input, which otherwise runs up to a minute per input and is not counted.
FUZZTIME_CI     ?= 5000x
FUZZMINIMIZE_CI ?= 200x

test: test-deps lint
	$(GO) test -race -timeout 20m ./...
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME_CI) FUZZMINIMIZE=$(FUZZMINIMIZE_CI)

## fuzz: run every fuzz target in the repository for FUZZTIME each (go test
## runs one target at a time); new crashers land in the package's
## testdata/fuzz/<target>/ and stay as regression seeds
FUZZTIME     ?= 1m
FUZZMINIMIZE ?= 60s

fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg; \
		done; \
	done

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: the go test benchmarks of every package
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## bench-report: regenerate the generated sections of BENCH_MARKDOWN
## (docs/BENCHMARKS.md; the hand-written sections are kept) and the plots beside
## it: the storage sweep, the end-to-end comparison and the end-to-end runs at
## 50,000 and 100,000 partitions. About 42 minutes on the 2-core, 24 GiB machine
## with nothing else running (the sum of the estimates below; the last run, on
## 2026-12-04 with the machine idle, took 37: storage 18m46s, end to end 18m14s,
## high partition counts 40s); it prints "part k of 3"
## with the time so far and the estimate left, and every run "run k of n" with
## the time left at its pace so far. At most ~16 GiB under BENCH_DIR at any
## moment (one sustained run; every run deletes its directory), and BENCH_DIR
## is removed when it ends, failed or not. Every BENCH_* setting can be
## overridden; the estimates hold for the defaults.
##
## Part 1, storage (`bench storage`), BENCH_EST_STORAGE minutes: the disk probe
## (1 GiB O_DIRECT: 1,298 MB/s when this was sized), then every layout x flush x
## partition count BENCH_TRIALS times, interleaved, after an unreported warm-up;
## the table shows the median and min-max. A sweep run writes BENCH_TOTAL or stops
## at BENCH_MAX_RUN. One trial is ~4.8 min: 1 partition ~5 s a run, 1,000 ~9-15 s,
## 10,000 ~13 s unified and 35-45 s for the Kafka layouts, which create, sync and
## delete 20,000 mapped index files around each run (timed: kafka-madv 1,000
## interval 9 s, kafka 1,000 sync 15 s; at 10,000 with 2 GiB/15 s: unified 20 s and
## 16 s sync, kafka 41 s and 46 s sync, kafka-madv 53 s). Sustained rows
## (BENCH_SUSTAINED_PARTITIONS, first flush) write 3x the dirty-page limit read
## from /proc (~13.7 GiB, ~7 s at the probed disk rate), each right after an
## O_DIRECT probe of that size (~7 s at 1,847-2,119 MB/s, its file deleted before the run) that
## its "of disk" is against (the disk's rate varies by 2x within the hour and
## with the size written; the 1 GiB probe is the sweep's), capped at
## BENCH_SUSTAINED_MAX_RUN (a capped row says so: in the last run kafka at 1 and
## 10,000 partitions and kafka-madv at 1), in the first BENCH_SUSTAINED_TRIALS
## trial only: ~6 min, the six probes ~0.75 min of it. Flush `sync` is Kafka's flush.messages=1 (an fsync per
## partition batch) against the unified log's one shared flush.
## BENCH_LIMIT_PARTITIONS run once each with BENCH_LIMIT_TOTAL to find where each
## layout stops on ulimit -n (20,000 here) and vm.max_map_count: ~2 min (timed:
## kafka stops at partition 19,990 on too many open files after 43 s; empty skips
## them). BENCH_FLAGS=--read adds the cold-cache read-back (root). BENCH_MARKDOWN
## names the file to regenerate; the plots go beside it.
##
## Part 2, end to end (`bench compare`), BENCH_EST_E2E minutes: each system a child
## on loopback, BENCH_E2E_RECORDS 1 KiB records per run (300,000: at 1 partition
## unilog takes ~1.5 s, long enough for a p999; the slow systems are bounded
## by the duration either way; produce and read-back each
## bounded by BENCH_E2E_DURATION), over BENCH_E2E_PARTITIONS, BENCH_E2E_TRIALS
## interleaved trials after a warm-up, each peak run followed by one at half of its
## rate for 5 s, then by one at 50,000 records/s for 5 s (one load for every
## system), the first second of each paced run left out of its latencies (the
## clients' start: `bench compare --paced-duration`, `--paced-warm-up`). A trial
## is ~16.5 min (timed: 49m43s for three at 0804609; ~6.5 min before those paced
## runs), 3 of them at 10,000 partitions (timed before them: the Kafka layout's
## four runs 2 min, JetStream's four 35 s), where the Kafka layout reaches ~1,200
## records/s async and ~450 sync: each of its runs lasts the duration, drains the
## records in flight and does not stop within BENCH_E2E_STOP_WAIT (its shutdown
## flushes 10,000 partitions; the row says it was killed); JetStream sync reaches
## ~2,000 records/s.
##
## Part 3, end to end at high partition counts (`bench compare --section`),
## BENCH_EST_WIDE minutes: BENCH_WIDE_RECORDS 100-byte records produced into a new
## topic of each of BENCH_WIDE_PARTITIONS partitions, then read back, for unilog and
## kfake (the in-memory floor), in its own section (timed: unilog at 50,000, 8 s).
BENCH_DIR                  ?= ./bench-data
BENCH_MARKDOWN             ?= docs/BENCHMARKS.md
BENCH_LAYOUTS              ?= unified,kafka,kafka-madv
BENCH_TOTAL                ?= 1GiB
BENCH_PARTITIONS           ?= 1,1000,10000
BENCH_FLUSH                ?= interval:100ms,sync
BENCH_TRIALS               ?= 3
BENCH_SUSTAINED_PARTITIONS ?= 1,10000
BENCH_SUSTAINED_MAX_RUN    ?= 30s
BENCH_SUSTAINED_TRIALS     ?= 1
BENCH_MAX_RUN              ?= 10s
BENCH_LIMIT_PARTITIONS     ?= 20000
BENCH_LIMIT_TOTAL          ?= 512MiB
BENCH_FLAGS                ?=
BENCH_E2E_SYSTEMS          ?= unilog,unilog-kafka-layout,jetstream,kfake
BENCH_E2E_PARTITIONS       ?= 1,100,1000,10000
BENCH_E2E_RECORDS          ?= 300000
BENCH_E2E_DURATION         ?= 5s
BENCH_E2E_STOP_WAIT        ?= 10s
BENCH_E2E_TRIALS           ?= 3
BENCH_E2E_FLAGS            ?= --half-peak --rate 50000 --paced-duration 5s --paced-warm-up 1s
BENCH_WIDE_PARTITIONS      ?= 50000,100000
BENCH_WIDE_RECORDS         ?= 200000
BENCH_WIDE_DURATION        ?= 60s
BENCH_WIDE_FLAGS           ?= --trials 3
BENCH_EST_STORAGE          ?= 20
BENCH_EST_E2E              ?= 50
BENCH_EST_WIDE             ?= 3

bench-report: build
	@set -e; trap 'rm -rf $(BENCH_DIR)' EXIT; \
	t0=$$(date +%s); left=$$(( $(BENCH_EST_STORAGE) + $(BENCH_EST_E2E) + $(BENCH_EST_WIDE) )); \
	part() { echo "bench-report: part $$1 of 3 ($$2): $$(( ($$(date +%s) - t0) / 60 )) min elapsed, about $$left min left by the Makefile's estimates" >&2; left=$$(( left - $$3 )); }; \
	part 1 storage $(BENCH_EST_STORAGE); \
	./$(BIN) bench storage --layouts $(BENCH_LAYOUTS) --partitions $(BENCH_PARTITIONS) \
		--flush $(BENCH_FLUSH) --message-size 1KiB --total $(BENCH_TOTAL) --producers 4 \
		--trials $(BENCH_TRIALS) --sustained-partitions $(BENCH_SUSTAINED_PARTITIONS) \
		--sustained-max-run $(BENCH_SUSTAINED_MAX_RUN) --sustained-trials $(BENCH_SUSTAINED_TRIALS) \
		--max-run $(BENCH_MAX_RUN) --limit-partitions "$(BENCH_LIMIT_PARTITIONS)" \
		--limit-total $(BENCH_LIMIT_TOTAL) --disk-probe 1GiB --dir $(BENCH_DIR) $(BENCH_FLAGS) \
		--plot $(dir $(BENCH_MARKDOWN))bench-storage.svg --markdown $(BENCH_MARKDOWN); \
	part 2 "end to end" $(BENCH_EST_E2E); \
	./$(BIN) bench compare --systems $(BENCH_E2E_SYSTEMS) --flush async,sync \
		--partitions $(BENCH_E2E_PARTITIONS) --message-size 1KiB --records $(BENCH_E2E_RECORDS) \
		--duration $(BENCH_E2E_DURATION) --producers 4 --acks -1 --trials $(BENCH_E2E_TRIALS) \
		--stop-wait $(BENCH_E2E_STOP_WAIT) --dir $(BENCH_DIR) $(BENCH_E2E_FLAGS) --plot $(dir $(BENCH_MARKDOWN))bench-e2e.svg --markdown $(BENCH_MARKDOWN); \
	part 3 "end to end, wide" $(BENCH_EST_WIDE); \
	./$(BIN) bench compare --systems unilog,kfake --flush async --partitions $(BENCH_WIDE_PARTITIONS) \
		--message-size 100 --records $(BENCH_WIDE_RECORDS) --duration $(BENCH_WIDE_DURATION) --producers 4 \
		--acks -1 --dir $(BENCH_DIR) $(BENCH_WIDE_FLAGS) --section "End to end at high partition counts" \
		--plot $(dir $(BENCH_MARKDOWN))bench-e2e-wide.svg --markdown $(BENCH_MARKDOWN); \
	echo "bench-report: done in $$(( ($$(date +%s) - t0) / 60 )) min" >&2

## bench-million: the 1,000,000-partition row of docs/BENCHMARKS.md ("A
## million partitions on one node"): one broker, 10 topics of 100,000
## partitions, 200,000 keyed records produced into each, the broker's RSS, and
## its restart to serving after a clean stop and after kill -9
## (scripts/bench-million.sh; its TOPICS, PARTITIONS, RECORDS, PARALLEL and
## TRIALS are passed through). A few minutes a trial; not part of `make test`.
## It replaces its section of BENCH_MARKDOWN ("A million partitions on one
## node: make bench-million": every trial, the medians, the load averages);
## `make bench-report` does not run it.
bench-million: build
	BIN=./$(BIN) MARKDOWN=$(BENCH_MARKDOWN) scripts/bench-million.sh

## soak: SOAK_DURATION of acks=all produce, consume and idle long polls with
## random client disconnects and a broker SIGKILL + restart every minute
## (--flush sync), then checks that every acknowledged record is stored exactly
## once and that the broker's memory stayed flat. Not part of `make test`.
SOAK_DURATION ?= 10m
SOAK_FLAGS    ?=

soak: build
	$(GO) run ./soak --bin ./$(BIN) --duration $(SOAK_DURATION) $(SOAK_FLAGS)

## soak-ha: the failover test (three brokers of one replica group, sync
## replication, --min-insync 2, the default lease, clients throughout) with
## SOAK_HA_FAULTS faults round robin: SIGKILL, SIGTERM (hand-over) and
## SIGSTOP of the leader, SIGKILL of a follower, and where the machine
## allows (root, ip(8)) a network partition of the leader made with network
## namespaces (each broker in its own; skipped with a message otherwise).
## The clients' history is checked with porcupine and read back whole; it
## prints each fault's failover (fault to the first acknowledged produce
## after it) and their min/median/max by kind (docs/BENCHMARKS.md). About
## 5 s per fault.
SOAK_HA_FAULTS ?= 100

soak-ha:
	UNILOG_SOAK_FAULTS=$(SOAK_HA_FAULTS) $(GO) test -count=1 -v -timeout 30m \
		-run '^TestFailoverKeepsAcknowledgedRecords$$' ./cmd/unilog

## compat: other clients' own tests against unilog (issue 16): franz-go's
## pkg/kgo integration tests (COMPAT_TESTS, default the five issue 16 names),
## a kafka-python and a KafkaJS admin + produce/consume round trip, each
## against a fresh `unilog broker` per flush mode of COMPAT_FLUSH (default
## "sync async"), COMPAT_RUNS times. COMPAT_SEEDS=host:port runs them once
## against that broker instead. Prints a table (test, flush, result, seconds,
## first failure line) and fails if any test failed. About 10 minutes with
## the defaults; not part of `make test`. Settings: scripts/compat.sh.
compat: build compat-deps
	scripts/compat.sh

## compat-deps: what `make compat` needs beyond Go: Debian's python3-kafka
## (KafkaJS is installed by scripts/compat.sh with npm, into bin/compat)
compat-deps:
	@/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || { \
		echo "installing python3-kafka"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-kafka) >/dev/null; }

clean:
	rm -rf bin
