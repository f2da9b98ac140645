package bench

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// echoTarget acknowledges every record within Send, checking its value:
// the template with a stamp in front, whichever buffer carried it.
type echoTarget struct {
	template []byte
	bad      *int
}

func (e echoTarget) Prepare(context.Context, int) error { return nil }
func (e echoTarget) NewSender() (sender, error)         { return e, nil }
func (e echoTarget) NewReceiver(context.Context, int) (receiver, int64, error) {
	return nil, 0, errors.New("echoTarget: no receiver")
}
func (e echoTarget) Close()                      {}
func (e echoTarget) Flush(context.Context) error { return nil }

func (e echoTarget) Send(_ context.Context, _ int32, value []byte, rec acker) error {
	if _, ok := stampOf(value); !ok || !bytes.Equal(value[stampSize:], e.template[stampSize:]) {
		*e.bad++
	}
	rec.ack(nil)
	return nil
}

// TestProduceAllocations: the load allocates nothing per record (no value,
// closure or timer) when the client allocates nothing, and every value is
// still the template behind its own stamp.
func TestProduceAllocations(t *testing.T) {
	const size = 1024
	for _, tc := range []struct {
		name string
		rate float64
	}{
		{"as fast as acknowledged", 0},
		// Paced: most records wait for their due time.
		{"paced", 2e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bad int
			target := echoTarget{template: valueTemplate(size), bad: &bad}
			run := func(records int64) float64 {
				return testing.AllocsPerRun(3, func() {
					r, err := produce(context.Background(), target, Load{Partitions: 10, MessageSize: size, Records: records, Producers: 1, Rate: tc.rate})
					if err != nil || r.Records != records {
						t.Fatalf("produced %d of %d: %v", r.Records, records, err)
					}
				})
			}
			small, large := run(1000), run(21000)
			if bad != 0 {
				t.Errorf("%d values differ from the template behind their stamp", bad)
			}
			if raceEnabled {
				t.Skip("allocation counts: sync.Pool drops items at random under the race detector")
			}
			if per := (large - small) / 20000; per > 0.01 {
				t.Errorf("%.2f allocations per record (%v for 1,000 records, %v for 21,000), want none", per, small, large)
			}
		})
	}
}
