package broker

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/unilog/unilog/commitlog"
)

// readOnlyStorage refuses appends as a log whose flush failed (or whose
// disk is full) does.
type readOnlyStorage struct {
	Storage
	cause error
}

func (s readOnlyStorage) Append(dst []Appended, _ []StorageBatch) ([]Appended, error) {
	return dst, fmt.Errorf("%w: %w", errStorageReadOnly, s.cause)
}

func (s readOnlyStorage) Stats() StorageStats {
	st := s.Storage.Stats()
	st.WriteFailed = true
	return st
}

// TestProduceReadOnlyStorage answers a produce to a storage that refuses
// writes with the retriable KAFKA_STORAGE_ERROR, shows the failure in
// unilog_log_write_failed, and still serves what was stored before.
func TestProduceReadOnlyStorage(t *testing.T) {
	for _, cause := range []error{commitlog.ErrFlushFailed, commitlog.ErrDiskFull} {
		t.Run(cause.Error(), func(t *testing.T) {
			b := startBroker(t, testConfig(t, t.TempDir()))
			cl := newClient(t, b.Addr())
			createTopic(t, cl, "ro", 1)
			if r := rawProduce(t, cl, "ro", 0, rawBatch(-1, -1, 0, "kept")); r.ErrorCode != 0 {
				t.Fatalf("produce before: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			// The client's request goes over a socket after this store,
			// which orders it before the broker's read.
			b.st = readOnlyStorage{Storage: b.st, cause: cause}

			r := rawProduce(t, cl, "ro", 0, rawBatch(-1, -1, 0, "refused"))
			if r.ErrorCode != kerr.KafkaStorageError.Code || !kerr.IsRetriable(kerr.ErrorForCode(r.ErrorCode)) {
				t.Fatalf("produce to a read-only storage: %v, want retriable KAFKA_STORAGE_ERROR", kerr.ErrorForCode(r.ErrorCode))
			}
			if p := rawFetch(t, cl, "ro", 0, 0, 0); p.ErrorCode != 0 || p.HighWatermark != 1 {
				t.Fatalf("fetch after the refusal: %v, high watermark %d", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark)
			}
			resp, err := http.Get("http://" + b.AdminAddr() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "\nunilog_log_write_failed 1\n") {
				t.Fatalf("/metrics lacks unilog_log_write_failed 1")
			}
		})
	}
}
