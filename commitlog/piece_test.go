package commitlog

import (
	"bytes"
	"testing"
)

func TestPieceLen(t *testing.T) {
	for _, tc := range []struct {
		pos, n, want int64
	}{
		{0, 10, 10},
		{0, zeroChunk + 1, zeroChunk},
		{zeroChunk - 5, 100, 5},
		{zeroChunk, 3 * zeroChunk, zeroChunk},
		{3*zeroChunk + 1, zeroChunk, zeroChunk - 1},
		{7, zeroChunk - 7, zeroChunk - 7},
	} {
		if got := pieceLen(tc.pos, tc.n); got != tc.want {
			t.Errorf("pieceLen(%d, %d) = %d, want %d", tc.pos, tc.n, got, tc.want)
		}
	}
}

// TestCutVector: the piece holds exactly the first n bytes, and putting
// whole back at cut restores the vector, as writevAt does.
func TestCutVector(t *testing.T) {
	iov := func() [][]byte { return [][]byte{[]byte("abc"), []byte("defgh"), []byte("ij")} }
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{1, "a"}, {3, "abc"}, {4, "abcd"}, {8, "abcdefgh"}, {9, "abcdefghi"}, {10, "abcdefghij"},
	} {
		v := iov()
		piece, cut, whole := cutVector(v, tc.n)
		if got := string(bytes.Join(piece, nil)); got != tc.want {
			t.Errorf("n=%d: piece %q, want %q", tc.n, got, tc.want)
		}
		v[cut] = whole
		if got := string(bytes.Join(v, nil)); got != "abcdefghij" {
			t.Errorf("n=%d: restored vector %q", tc.n, got)
		}
	}
}
