package broker

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKcatReadCommitted: kcat (librdkafka) consuming at read_committed
// skips the records of aborted transactions and the markers, using the
// aborted-transaction list of the fetch, and reads each committed record
// once; at read_uncommitted it reads them all.
func TestKcatReadCommitted(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed (make test-deps installs it)")
	}
	b := startBroker(t, testConfig(t, t.TempDir()))
	createTopic(t, newClient(t, b.Addr()), "kcat-txn", 3)
	const txns, perTxn = 6, 6
	committed := produceTxns(t, newClient(t, b.Addr(), kgo.TransactionalID("kcat-txn")), "kcat-txn", 0, txns, perTxn)

	consume := func(isolation string) map[string]int {
		cmd := exec.CommandContext(testCtx(t), kcat, "-b", b.Addr(), "-C", "-t", "kcat-txn", "-o", "beginning", "-e", "-q",
			"-X", "isolation.level="+isolation, "-f", "%s\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kcat %s: %v\n%s", isolation, err, out)
		}
		seen := make(map[string]int)
		for _, v := range strings.Fields(string(out)) {
			seen[v]++
		}
		return seen
	}
	checkExactlyOnce(t, consume("read_committed"), committed)
	if all := consume("read_uncommitted"); len(all) != txns*perTxn {
		t.Errorf("kcat read_uncommitted saw %d distinct records, want %d", len(all), txns*perTxn)
	}
}
