package txn

// State is a transaction's place in Kafka's transaction protocol, as
// DescribeTransactions and ListTransactions name it.
//
//	Empty ──AddPartitions/AddOffsets──▶ Ongoing ──EndTxn──▶ PrepareCommit ──markers──▶ CompleteCommit
//	  ▲                                   │     └─EndTxn/timeout/re-init──▶ PrepareAbort ──markers──▶ CompleteAbort
//	  └──────── InitProducerId ◀──────────┴───────────── (either Complete state) ─────────────────────┘
//
// The Prepare states last only while one EndTxn writes its markers, and
// after a crash until Open finishes them.
type State int8

const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead"}

// String is the state's name as Kafka spells it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState is the inverse of String, for ListTransactions' state filter.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// open reports a transaction that holds partitions or offsets not yet
// committed or aborted.
func (s State) open() bool { return s == Ongoing || s == PrepareCommit || s == PrepareAbort }

// decided reports a transaction whose outcome is stored but not yet
// carried out.
func (s State) decided() bool { return s == PrepareCommit || s == PrepareAbort }
