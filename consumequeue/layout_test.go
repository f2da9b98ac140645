package consumequeue

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
)

func TestListQueues(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"t/7", "t/007", "t/-1", "t/+3", "t/x", "t/2147483648", "u/0", journalDirName + "/1", "empty"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "t", "8"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ListQueues(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []ID{{"t", 7}, {"u", 0}}; !slices.Equal(got, want) {
		t.Errorf("ListQueues = %v, want %v", got, want)
	}
	if got, err := ListQueues(filepath.Join(dir, "missing")); err != nil || got != nil {
		t.Errorf("missing dir: %v, %v; want nothing", got, err)
	}
}

func TestListFiles(t *testing.T) {
	qdir := t.TempDir()
	for _, name := range []string{fileName(600), fileName(0), fileName(300), "00000000000000000001.tmp", "-0000000000000000001", "0000000000000000001"} {
		if err := os.WriteFile(filepath.Join(qdir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(qdir, fileName(900)), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := ListFiles(qdir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 300, 600}; !slices.Equal(got, want) {
		t.Errorf("ListFiles = %v, want %v", got, want)
	}
}

// TestListQueuesSkipsUnreadableTopic: one topic directory that cannot be
// read (or vanished under a concurrent delete) is reported but does not
// hide the other topics' queues, which Store.Queues, TruncateFrom and
// DeleteBefore walk.
func TestListQueuesSkipsUnreadableTopic(t *testing.T) {
	fsys := unreadable{fstest.MapFS{
		"a/0/" + fileName(0): {},
		"b/1/" + fileName(0): {},
		"c/2/" + fileName(0): {},
	}, "c"}
	got, err := listQueues(fsys, "test")
	if want := []ID{{"a", 0}, {"b", 1}}; !slices.Equal(got, want) || err == nil {
		t.Errorf("listQueues = %v, %v; want %v and the error of c", got, err, want)
	}
	fsys.bad = "gone"
	fsys.MapFS["gone"] = &fstest.MapFile{Mode: fs.ModeDir}
	if got, err := listQueues(fsys, "test"); err != nil || len(got) != 3 {
		t.Errorf("a topic removed under the listing: %v, %v; want the other three, no error", got, err)
	}
}

// unreadable fails ReadDir of one directory: with permission denied, or
// as removed meanwhile when bad is "gone".
type unreadable struct {
	fstest.MapFS
	bad string
}

func (u unreadable) ReadDir(name string) ([]fs.DirEntry, error) {
	switch {
	case name != u.bad:
		return u.MapFS.ReadDir(name)
	case name == "gone":
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrPermission}
}
