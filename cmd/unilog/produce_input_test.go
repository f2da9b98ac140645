package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestReadChunksLines(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "a\nb\n", want: []string{"a", "b"}},
		{in: "a\nb", want: []string{"a", "b"}},
		{in: "a\n\nb\n", want: []string{"a", "", "b"}},
		{in: "\n", want: []string{""}},
		{in: "a\r\n", want: []string{"a"}},
		{in: "a\r", want: []string{"a"}},
		{in: "a\rb\n", want: []string{"a\rb"}},
		{in: "0123456789\n", want: []string{"0123456789"}},
		{in: "0123456789\r\n", want: []string{"0123456789"}},
		{in: "0123456789", want: []string{"0123456789"}},
		{in: "ok\n0123456789a\nlost\n", want: []string{"ok"}, wantErr: "line 2 is longer than 10 bytes"},
		{in: "ok\n0123456789a", want: []string{"ok"}, wantErr: "line 2 is longer than 10 bytes"},
	} {
		var got []string
		err := readChunks(context.Background(), strings.NewReader(tc.in), 10, func(lines [][]byte) {
			for _, l := range lines {
				got = append(got, string(l))
			}
		})
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: lines %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestReadChunksLongLine: a line longer than the reader's 64 KiB buffer is
// read whole, and one longer than the limit is refused without reading
// all of it into memory.
func TestReadChunksLongLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	var got []string
	if err := readChunks(context.Background(), strings.NewReader("a\n"+long+"\nb\n"), len(long), func(lines [][]byte) {
		for _, l := range lines {
			got = append(got, string(l))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "a" || got[1] != long || got[2] != "b" {
		t.Fatalf("got %d lines, want a, %d bytes, b", len(got), len(long))
	}
	err := readChunks(context.Background(), io.MultiReader(strings.NewReader(long), endless{}), 1000, func([][]byte) {})
	if err == nil || !strings.Contains(err.Error(), "line 1 is longer than 1000 bytes") {
		t.Fatalf("an endless line: %v", err)
	}
}

// endless is a line that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'y'
	}
	return len(p), nil
}

// TestReadChunksCuts: a regular file is handed over in chunks as large as
// the caps allow, while a pipe's lines are handed over as soon as they
// have arrived, without waiting for the next ones.
func TestReadChunksCuts(t *testing.T) {
	long := strings.Repeat("v", 4000)
	for _, tc := range []struct {
		name  string
		lines int
		value string
		want  []int // lines per chunk
	}{
		{name: "by lines", lines: chunkRecords + 1000, value: "v", want: []int{chunkRecords, 1000}},
		// Lines of about 4 KiB: the 8,379th takes the first chunk past 32 MiB.
		{name: "by bytes", lines: 8500, value: long, want: []int{8379, 121}},
	} {
		var in strings.Builder
		for i := range tc.lines {
			fmt.Fprintf(&in, "%d\t%s\n", i, tc.value)
		}
		path := filepath.Join(t.TempDir(), "in")
		if err := os.WriteFile(path, []byte(in.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		n := 0
		err = readChunks(context.Background(), f, 8000, func(l [][]byte) {
			sizes = append(sizes, len(l))
			for _, line := range l {
				if want := fmt.Sprintf("%d\t%s", n, tc.value); string(line) != want {
					t.Fatalf("%s: line %d is %.20q..., want %.20q...", tc.name, n, line, want)
				}
				n++
			}
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(sizes, tc.want) {
			t.Fatalf("%s: a file of %d lines came in chunks of %v, want %v", tc.name, tc.lines, sizes, tc.want)
		}
	}

	pr, pw := io.Pipe()
	defer pw.Close()
	got := make(chan []string, 10)
	go readChunks(context.Background(), pr, 100, func(lines [][]byte) {
		var s []string
		for _, l := range lines {
			s = append(s, string(l))
		}
		got <- s
	})
	for _, write := range []string{"one\n", "two\nthree\n"} {
		if _, err := io.WriteString(pw, write); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-got:
			if want := strings.Fields(write); !reflect.DeepEqual(s, want) {
				t.Fatalf("after writing %q to the pipe: chunk %q, want %q", write, s, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the pipe's %q was not handed over before more input", write)
		}
	}
}

// FuzzReadChunks: readChunks splits any input into the lines, and fails on
// the same overlong line, as bufio.Scanner's ScanLines with the same limit.
func FuzzReadChunks(f *testing.F) {
	for _, s := range []string{"", "a", "a\nb", "a\r\nb\r", "\n\n", "\r", strings.Repeat("x", 17) + "\ny", strings.Repeat("x", 16) + "\r\n"} {
		f.Add([]byte(s))
	}
	const maxLine = 16
	f.Fuzz(func(t *testing.T, in []byte) {
		var want []string
		var wantErr string
		sc := bufio.NewScanner(bytes.NewReader(in))
		sc.Buffer(make([]byte, maxLine+2), maxLine+2)
		for sc.Scan() {
			if len(sc.Bytes()) > maxLine {
				wantErr = fmt.Sprintf("line %d is longer than %d bytes", len(want)+1, maxLine)
				break
			}
			want = append(want, sc.Text())
		}
		if errors.Is(sc.Err(), bufio.ErrTooLong) {
			wantErr = fmt.Sprintf("line %d is longer than %d bytes", len(want)+1, maxLine)
		}
		var got []string
		err := readChunks(context.Background(), bytes.NewReader(in), maxLine, func(lines [][]byte) {
			for _, l := range lines {
				got = append(got, string(l))
			}
		})
		if gotErr := fmt.Sprint(err); err == nil && wantErr != "" || err != nil && gotErr != wantErr {
			t.Fatalf("%q: error %v, want %q", in, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: lines %q, want %q", in, got, want)
		}
	})
}

// BenchmarkScanChunks reads the million row's input of one topic (200,000
// keyed lines, 6 MB) from a file, as `produce --file` does.
func BenchmarkScanChunks(b *testing.B) {
	var in strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&in, "key-%d\tvalue %d\n", i, i)
	}
	path := filepath.Join(b.TempDir(), "in")
	if err := os.WriteFile(path, []byte(in.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(in.Len()))
	b.ReportAllocs()
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := readChunks(context.Background(), f, maxProduceLine, func([][]byte) {}); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
