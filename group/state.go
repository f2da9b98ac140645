package group

// State is a group's place in the rebalance protocol.
type State int8

// The states of Kafka's classic group protocol:
//
//	Empty ──join──▶ PreparingRebalance ──all joined / rebalance timeout──▶ CompletingRebalance
//	  ▲                  ▲        │                                            │ leader's SyncGroup
//	  │ last member      │        └──no member left──▶ Empty                   ▼
//	  └─ leaves ─────────┴──────────── join, leave, expiry ◀────────────── Stable
//
// Dead is a deleted group; its goroutine has ended.
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

// String is the state's name as Kafka's DescribeGroups and ListGroups spell it.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}
