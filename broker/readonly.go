package broker

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/store"
)

// A full disk makes the broker read-only instead of failing: the commit
// log reports ErrDiskFull before writing anything (it allocates each file
// whole with fallocate), so everything stored stays readable and intact.
// Produce is answered with KAFKA_STORAGE_ERROR, which clients retry;
// fetches go on. Every Produce while read-only tries the append again, so
// the first one after space returns succeeds and ends the read-only state;
// no timer is needed. Entering and leaving are logged once each and
// unilog_read_only shows the state.

// errReadOnly is the message produce answers carry while the disk is full.
const errReadOnly = "disk full: broker is read-only until space is freed"

// noteAppend tracks the read-only state from the result of one append and
// reports whether err was a full disk (the produce answer is then
// KAFKA_STORAGE_ERROR with errReadOnly, and the error needs no further
// logging).
func (b *Broker) noteAppend(err error) bool {
	full := errors.Is(err, store.ErrDiskFull)
	switch {
	case full && b.readOnly.CompareAndSwap(false, true):
		b.log.WithFields(logrus.Fields{"data_dir": b.cfg.DataDir, "error": err}).Error("disk full: broker is read-only; produce answers KAFKA_STORAGE_ERROR, fetches continue, writing resumes when space is freed")
	case err == nil && b.readOnly.Load() && b.readOnly.CompareAndSwap(true, false):
		b.log.WithField("data_dir", b.cfg.DataDir).Warn("disk space available again: broker accepts produce")
	}
	return full
}

func (b *Broker) readOnlyGauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "unilog", Name: "read_only", Help: "1 while a full disk keeps the broker from accepting produce, else 0.",
	}, func() float64 {
		if b.readOnly.Load() {
			return 1
		}
		return 0
	})
}
