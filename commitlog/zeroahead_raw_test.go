package commitlog

import "testing"

// TestZeroAheadRaw: a follower writing the leader's bytes (AppendRaw, in
// chunks of about a batch) zeroes ahead of them as the leader's appends
// do, and its log stays byte for byte the leader's.
func TestZeroAheadRaw(t *testing.T) {
	opts := testOptions(t, "", replicaFileSize)
	opts.FlushMode = FlushAsync
	leader := openLog(t, opts)
	defer leader.Close()
	fopts := testOptions(t, "", replicaFileSize)
	fopts.FlushMode = FlushAsync
	follower := openLog(t, fopts)
	defer follower.Close()
	replicaWorkload(t, leader)
	replicate(t, leader, follower, 3000)
	end := follower.WriteOffset()
	segs := follower.chain()
	s := segs[len(segs)-1]
	follower.wmu.Lock()
	zeroed := s.zeroed
	follower.wmu.Unlock()
	if want := min((end-s.base+zeroChunk-1)/zeroChunk*zeroChunk, s.size); zeroed != want {
		t.Errorf("the follower zeroed its last file to %d after writing to %d, want %d", zeroed, end-s.base, want)
	}
	if !isZero(s.ro[end-s.base:]) {
		t.Error("the follower's file is not zero after the end of the log")
	}
	if err := leader.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := follower.Flush(); err != nil {
		t.Fatal(err)
	}
	sameLogs(t, leader, follower)
}
