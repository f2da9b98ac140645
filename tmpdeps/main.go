package main

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/edsrzf/mmap-go"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/sirupsen/logrus"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "github.com/twmb/franz-go/pkg/kmsg"
	_ "github.com/urfave/cli/v2"
	_ "github.com/valyala/bytebufferpool"
	_ "golang.org/x/sys/unix"
	_ "gonum.org/v1/plot"
	_ "github.com/klauspost/compress/zstd"
)

func main() {}
