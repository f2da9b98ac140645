// Package logcheck records what Kafka clients saw of a cluster (records
// produced and the offsets they were acknowledged at, records fetched,
// group offsets committed and read back) and checks that history for
// linearizability with porcupine against a sequential model: every
// partition is one append-only log, every group's committed offset for a
// partition is one register.
//
// Checking a history instead of asserting on counts catches what a count
// misses: a record served to a consumer at an offset that later holds
// another record (it was lost in a failover), a record stored twice, a
// record acknowledged at an offset that already held another, a committed
// offset that reads back older than an acknowledged commit.
//
// # Model
//
// Per log (a topic partition), the state is the sequence of values stored:
//
//	Append(v) -> o      legal iff o == len(log); log = log + v
//	Append(v) -> ok     acknowledged, the client not saying where (some
//	                    do not): log = log + v
//	Append(v) -> ?      outcome unknown (error, timeout, never answered):
//	                    log = log + v, its return placed after every other
//	                    operation, so "never happened" is always one legal
//	                    linearization
//	Read(a) -> vs, end  legal iff log[a:a+len(vs)] == vs, and when end is
//	                    known (a read made with nothing in flight), len(log) == end
//
// Per group register (group, topic, partition), the state is the committed
// offset, -1 before any commit:
//
//	Commit(o) -> ok|?   reg = o (an unknown outcome as for Append)
//	Fetch() -> o        legal iff reg == o
//
// An operation of unknown outcome whose effect no read saw is dropped
// before the search: placing it last is always legal, and keeping
// thousands of them (a client retrying against a node that is not the
// leader) would make every step of the search try each.
//
// Likewise an append whose offset the client never learnt (an unknown
// outcome, or a client that does not report offsets) but that a complete
// read (from 0 to the end it saw, made with nothing in flight) holds gets
// the offset that read found it at and ends by that read: values being
// unique, the model could place it nowhere else.
//
// Values must be unique in a history: that makes "present exactly once"
// part of the model, since a value stored twice has one Append to explain
// two positions.
//
// Linearizability says nothing about the order of two appends that
// overlap in time, and a Kafka producer pipelines its records, so
// Check also verifies each producer's per-partition order separately: the
// acknowledged appends of one client to one log, in call order, have
// increasing offsets (Kafka's guarantee with an idempotent producer). A
// client is one producer calling from one goroutine.
package logcheck
