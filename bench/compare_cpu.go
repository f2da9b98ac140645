package bench

import "time"

// Where the two cores go. The broker's CPU alone cannot say whether a run
// was bound by the broker: the load generator's clients (franz-go,
// nats.go) run in this process on the same cores, and at many partitions
// a producer sends about one record per batch. So every phase of a run is
// bracketed by a cpuSample of both processes and the wall clock, and the
// report shows the clients' CPU per GB beside the broker's and the cores
// both used together.

// cpuSample is taken at a phase boundary of a run; a phase's figures are
// the differences of two samples.
type cpuSample struct {
	broker time.Duration // the server's CPU (all of this process when in-process)
	self   time.Duration // this process: the clients, when the broker is a child
	wall   time.Time
}

func sampleCPU(srv Server) (cpuSample, error) {
	b, err := srv.CPU()
	if err != nil {
		return cpuSample{}, err
	}
	s, err := selfCPU()
	if err != nil {
		return cpuSample{}, err
	}
	return cpuSample{broker: b, self: s, wall: time.Now()}, nil
}

// ClientCPU is the load generator's CPU in a run: this process, whose
// clients drive the broker. It is only separable from the broker's when
// the broker runs as a child.
type ClientCPU struct {
	ProduceS       float64 `json:"produce_s"`
	ConsumeS       float64 `json:"consume_s"`
	SPerGB         float64 `json:"s_per_gb"`
	SPerGBConsumed float64 `json:"s_per_gb_consumed"`
}

// cpuSeparable says whether a server's CPU excludes this process's.
func cpuSeparable(srv Server) bool { return srv.CPUSource() == CPUChild }

// setProduceCPU fills the produce phase's figures from the samples around
// it: the broker's and, when separable, the clients' CPU per GB, and the
// cores both used over the phase's wall time (in-process the broker's
// figure already counts both).
func (r *CompareRun) setProduceCPU(from, to cpuSample, separable bool) {
	r.BrokerCPUProduceS = (to.broker - from.broker).Seconds()
	r.BrokerCPUSPerGB = perGB(r.BrokerCPUProduceS, r.Bytes)
	used := r.BrokerCPUProduceS
	if separable {
		c := (to.self - from.self).Seconds()
		r.ClientCPU = &ClientCPU{ProduceS: c, SPerGB: perGB(c, r.Bytes)}
		used += c
	}
	if wall := to.wall.Sub(from.wall).Seconds(); wall > 0 {
		r.CoresUsed = used / wall
	}
}

// setConsumeCPU fills the read-back phase's figures, bytes of them read.
func (r *CompareRun) setConsumeCPU(from, to cpuSample, bytes int64) {
	r.BrokerCPUConsumeS = (to.broker - from.broker).Seconds()
	r.BrokerCPUSPerGBConsumed = perGB(r.BrokerCPUConsumeS, bytes)
	if r.ClientCPU != nil {
		r.ClientCPU.ConsumeS = (to.self - from.self).Seconds()
		r.ClientCPU.SPerGBConsumed = perGB(r.ClientCPU.ConsumeS, bytes)
	}
}
