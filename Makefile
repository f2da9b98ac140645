GO       ?= go
BIN      ?= bin/unilog
DATA_DIR ?= ./data
LISTEN   ?= 127.0.0.1:9092
ADMIN    ?= 127.0.0.1:9644
GOFILES   = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './vendor/*')

.PHONY: all build run test test-deps lint bench bench-report clean

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

## test: lint, then every test under the race detector
test: test-deps lint
	$(GO) test -race -timeout 20m ./...

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: the go test benchmarks of every package
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
