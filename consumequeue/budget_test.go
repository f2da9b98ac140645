package consumequeue

import "testing"

// TestPromotionBudget checks when a small queue asks for its files: past
// SmallEntriesMax entries always, past SmallEntries only while the small
// queues' journal records take more than SmallBudget, including a budget
// that other queues' appends used up after the queue passed SmallEntries.
func TestPromotionBudget(t *testing.T) {
	const small, most = 16, 64
	// Each entry's record is entryRecordSize bytes, each queue's
	// declaration declareSize: a budget that ten queues of small+1 entries
	// stay under, and that a larger topic's entries push past.
	id := ID{Topic: "t", Partition: 0}
	under := 10 * (declareSize(id) + (small+1)*entryRecordSize)
	for _, tc := range []struct {
		name    string
		budget  int64
		entries int64 // appended to queue 0
		others  int64 // entries then appended to each of queues 1..9 (of topic "fill")
		then    int64 // entries then appended to queue 0
		want    bool  // queue 0 asked for its files
	}{
		{name: "under budget past SmallEntries", budget: under, entries: small + 1},
		{name: "under budget at SmallEntriesMax", budget: under, entries: most},
		{name: "under budget past SmallEntriesMax", budget: under, entries: most + 1, want: true},
		{name: "over budget at SmallEntries", budget: 1, entries: small},
		{name: "over budget past SmallEntries", budget: 1, entries: small + 1, want: true},
		{name: "budget used up by others, no append since", budget: under, entries: small + 1, others: 100},
		{name: "budget used up by others, then an append", budget: under, entries: small + 1, others: 100, then: 1, want: true},
		{name: "others within budget, then an append", budget: under, entries: small + 1, others: 2, then: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, Options{Dir: t.TempDir(), EntriesPerFile: 256, SmallEntries: small, SmallEntriesMax: most,
				SmallBudget: tc.budget, PromoteSpread: -1, Logger: quietLogger()})
			defer s.Close()
			q := mustQueue(t, s, "t", 0)
			appendRange(t, q, 0, tc.entries)
			for p := int32(1); p < 10; p++ {
				appendRange(t, mustQueue(t, s, "fill", p), 0, tc.others)
			}
			appendRange(t, q, tc.entries, tc.entries+tc.then)
			waitPromotions(t, s)
			if got := !q.small.Load(); got != tc.want {
				t.Fatalf("queue promoted %v, want %v (journal holds %d bytes of small queues, budget %d)", got, tc.want, s.journal.liveBytes, tc.budget)
			}
			hi := tc.entries + tc.then
			for off := int64(0); off < hi; off++ {
				if e, err := q.Get(off); err != nil || e != entryAt(off) {
					t.Fatalf("Get(%d) = %+v, %v, want %+v", off, e, err, entryAt(off))
				}
			}
		})
	}
}

// TestSmallOptions checks the small-queue options' defaults and bounds.
func TestSmallOptions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		in          Options
		small, most int
		budget      int64
		wantErr     bool
	}{
		{name: "defaults", small: DefaultSmallEntries, most: DefaultSmallEntriesMax, budget: DefaultSmallBudget},
		{name: "SmallEntries alone promotes there", in: Options{SmallEntries: 16}, small: 16, most: 16, budget: DefaultSmallBudget},
		{name: "SmallEntriesMax alone", in: Options{SmallEntriesMax: 100}, small: DefaultSmallEntries, most: 100, budget: DefaultSmallBudget},
		{name: "both and a budget", in: Options{SmallEntries: 8, SmallEntriesMax: 32, SmallBudget: 1 << 20}, small: 8, most: 32, budget: 1 << 20},
		{name: "max below SmallEntries", in: Options{SmallEntries: 16, SmallEntriesMax: 8}, wantErr: true},
		{name: "max below the default SmallEntries", in: Options{SmallEntriesMax: 10}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Dir = t.TempDir()
			o, err := tc.in.withDefaults()
			if tc.wantErr {
				if err == nil {
					t.Fatalf("options %+v accepted", tc.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.SmallEntries != tc.small || o.SmallEntriesMax != tc.most || o.SmallBudget != tc.budget {
				t.Fatalf("SmallEntries %d, SmallEntriesMax %d, SmallBudget %d; want %d, %d, %d",
					o.SmallEntries, o.SmallEntriesMax, o.SmallBudget, tc.small, tc.most, tc.budget)
			}
			again, err := o.withDefaults()
			if err != nil || again.SmallEntries != o.SmallEntries || again.SmallEntriesMax != o.SmallEntriesMax || again.SmallBudget != o.SmallBudget {
				t.Fatalf("defaults applied twice changed them: %+v, %v", again, err)
			}
		})
	}
}
