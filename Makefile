GO       ?= go
BIN      ?= bin/unilog
DATA_DIR ?= ./data
LISTEN   ?= 127.0.0.1:9092
ADMIN    ?= 127.0.0.1:9644
GOFILES   = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './vendor/*')

.PHONY: all build run test test-deps lint fuzz bench bench-report soak soak-ha clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/unilog

## run: start one broker on $(DATA_DIR)
run: build
	./$(BIN) broker --data-dir $(DATA_DIR) --listen $(LISTEN) --admin $(ADMIN)

## test-deps: install what the tests need on a fresh machine
test-deps:
	@command -v kcat >/dev/null 2>&1 || { \
		echo "installing kcat"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat) >/dev/null; }

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

## bench-report: regenerate docs/BENCHMARKS.md: the storage sweep, then the
## end-to-end section. Needs ~16 GiB free under BENCH_DIR; a long run (hours
## on the 2-core, 24 GiB machine: the lead decides when).
##
## Storage (`bench storage`): every configuration runs BENCH_TRIALS times,
## interleaved, after an unreported warm-up; the table shows the median and
## min-max. Every run writes BENCH_TOTAL, above vm.dirty_ratio (20% of ~23 GiB
## available, about 4.6 GiB), and the sustained rows (BENCH_SUSTAINED_PARTITIONS,
## first flush policy) write 3x the dirty-page limit read from /proc, so that
## write-back to the disk is the figure. Flush `sync` is Kafka's
## flush.messages=1 (an fsync per partition batch) against the unified log's one
## shared flush. BENCH_MAX_RUN caps each run (BENCH_SUSTAINED_MAX_RUN each
## sustained one: at 30 s none passed the limit in a trial); a capped run says so.
## BENCH_LIMIT_PARTITIONS then find where each layout stops on ulimit -n and
## vm.max_map_count. BENCH_FLAGS=--read adds the cold-cache read-back
## (drop_caches needs root).
##
## End to end (`bench compare`): each system started as a child on loopback,
## BENCH_E2E_RECORDS per run (bounded by BENCH_E2E_DURATION), swept over
## BENCH_E2E_PARTITIONS, each rerun at half its peak rate for latency.
BENCH_DIR                  ?= ./bench-data
BENCH_LAYOUTS              ?= unified,kafka,kafka-madv
BENCH_TOTAL                ?= 6GiB
BENCH_PARTITIONS           ?= 1,16,256,1024,4096,10000
BENCH_FLUSH                ?= none,interval:100ms,sync
BENCH_TRIALS               ?= 3
BENCH_SUSTAINED_PARTITIONS ?= 1,10000
BENCH_SUSTAINED_MAX_RUN    ?= 3m
BENCH_MAX_RUN              ?= 20s
BENCH_LIMIT_PARTITIONS     ?= 20000,50000,100000
BENCH_LIMIT_TOTAL          ?= 1GiB
BENCH_FLAGS                ?=
BENCH_E2E_SYSTEMS          ?= unilog,unilog-kafka-layout,jetstream,kfake
BENCH_E2E_PARTITIONS       ?= 1,100,1000,10000
BENCH_E2E_RECORDS          ?= 1000000
BENCH_E2E_DURATION         ?= 60s
BENCH_E2E_FLAGS            ?= --half-peak

bench-report: build
	./$(BIN) bench storage --layouts $(BENCH_LAYOUTS) --partitions $(BENCH_PARTITIONS) \
		--flush $(BENCH_FLUSH) --message-size 1KiB --total $(BENCH_TOTAL) --producers 4 \
		--trials $(BENCH_TRIALS) --sustained-partitions $(BENCH_SUSTAINED_PARTITIONS) \
		--sustained-max-run $(BENCH_SUSTAINED_MAX_RUN) \
		--max-run $(BENCH_MAX_RUN) --limit-partitions $(BENCH_LIMIT_PARTITIONS) \
		--limit-total $(BENCH_LIMIT_TOTAL) --disk-probe 1GiB --dir $(BENCH_DIR) $(BENCH_FLAGS) \
		--plot docs/bench-storage.svg --markdown docs/BENCHMARKS.md
	./$(BIN) bench compare --systems $(BENCH_E2E_SYSTEMS) --flush async,sync \
		--partitions $(BENCH_E2E_PARTITIONS) --message-size 1KiB --records $(BENCH_E2E_RECORDS) \
		--duration $(BENCH_E2E_DURATION) --producers 4 --acks -1 --dir $(BENCH_DIR) $(BENCH_E2E_FLAGS) \
		--plot docs/bench-e2e.svg --markdown docs/BENCHMARKS.md
	rm -rf $(BENCH_DIR)

## soak: SOAK_DURATION of acks=all produce, consume and idle long polls with
## random client disconnects and a broker SIGKILL + restart every minute
## (--flush sync), then checks that every acknowledged record is stored exactly
## once and that the broker's memory stayed flat. Not part of `make test`.
SOAK_DURATION ?= 10m
SOAK_FLAGS    ?=

soak: build
	$(GO) run ./soak --bin ./$(BIN) --duration $(SOAK_DURATION) $(SOAK_FLAGS)

## soak-ha: the failover test (three brokers of one replica group, sync
## replication, clients throughout) with SOAK_HA_KILLS SIGKILLs of the leader;
## it prints the time to a new leader each round and their min/median/max
## (docs/BENCHMARKS.md). About 6 s per kill.
SOAK_HA_KILLS ?= 20

soak-ha:
	UNILOG_SOAK_KILLS=$(SOAK_HA_KILLS) $(GO) test -count=1 -v -timeout 30m \
		-run '^TestFailoverKeepsAcknowledgedRecords$$' ./cmd/unilog

clean:
	rm -rf bin
