// Package framedtest checks that a format still writes the bytes older
// builds wrote. Only tests import it.
package framedtest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Golden returns testdata/formats/<name>, a file written by an earlier
// build, failing the test if this build encodes the same value as other
// bytes (a format may gain versions, never change what it wrote). There is
// deliberately no way to rewrite the files from a test: they were written
// once, by the build before the framed codec, and are the proof.
func Golden(t *testing.T, name string, encoded []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", "formats", name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, encoded) {
		t.Errorf("%s: this build encodes\n%x\nwhere an earlier one wrote\n%x", name, encoded, b)
	}
	return b
}
