package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// What `produce` reads ahead of the client, at most, in one chunk. A
// chunk's keyed records go to the client grouped by partition
// (produce_group.go), so a chunk that holds several records of each
// partition sends them in one batch; at 100,000 partitions that takes a
// chunk of hundreds of thousands of records.
const (
	chunkBytes   = 32 << 20
	chunkRecords = 256 << 10
)

// errLineTooLong is turned into "line N is longer than M bytes".
var errLineTooLong = errors.New("line too long")

// readChunks calls fn with the lines of in, many at a time, until EOF, a
// read error or the end of ctx. A chunk ends at chunkRecords lines or
// chunkBytes bytes and, unless in is a regular file, wherever the lines
// read so far are all that in has given: a line typed on a terminal or
// written into a pipe is handed over at once, not when more follow.
// Reading happens in its own goroutine so that SIGINT stops a produce that
// waits on a terminal or a pipe; that goroutine is abandoned blocked in
// Read, which is harmless as the command is about to exit.
func readChunks(ctx context.Context, in io.Reader, maxLine int, fn func(lines [][]byte)) error {
	chunks := make(chan [][]byte, 1)
	errc := make(chan error, 1)
	go func() {
		defer close(chunks)
		left, regular := regularFileLeft(in)
		errc <- scanChunks(in, maxLine, !regular, left, func(lines [][]byte) bool {
			select {
			case chunks <- lines:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	for {
		select {
		case lines, ok := <-chunks:
			if !ok {
				return <-errc
			}
			fn(lines)
		case <-ctx.Done():
			return nil
		}
	}
}

// regularFileLeft reports whether r is a regular file and, if so, how many
// of its bytes are left to read.
func regularFileLeft(r io.Reader) (left int64, regular bool) {
	f, ok := r.(*os.File)
	if !ok {
		return 0, false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0, false
	}
	at, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, true
	}
	return max(st.Size()-at, 0), true
}

// chunkSlack is room past chunkBytes in a chunk's buffer for the line
// that crosses it.
const chunkSlack = 64 << 10

// scanChunks splits in into lines and passes them to emit in chunks (see
// readChunks); cutAtWait ends a chunk whenever the next line needs a Read.
// It stops when emit returns false. The lines of one chunk share one
// buffer, which the client holds until their records are delivered. left,
// if not 0, is how many bytes in holds: each chunk's buffer is made at
// the size it will need instead of grown by doubling, which copied the
// lines again and touched twice their memory (BenchmarkScanChunks).
func scanChunks(in io.Reader, maxLine int, cutAtWait bool, left int64, emit func([][]byte) bool) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var (
		buf  []byte
		ends []int // reused: a chunk's lines are made from it at the cut
		n    int   // lines read
	)
	flush := func() bool {
		if len(ends) == 0 {
			return true
		}
		lines := make([][]byte, len(ends))
		start := 0
		for i, end := range ends {
			lines[i] = buf[start:end:end]
			start = end
		}
		left -= int64(len(buf))
		buf, ends = nil, ends[:0]
		return emit(lines)
	}
	for {
		if buf == nil && left > 0 {
			buf = make([]byte, 0, min(left, chunkBytes+chunkSlack))
		}
		var err error
		buf, err = appendLine(br, buf, maxLine)
		switch {
		case err == io.EOF:
			flush()
			return nil
		case errors.Is(err, errLineTooLong):
			flush()
			return fmt.Errorf("line %d is longer than %d bytes", n+1, maxLine)
		case err != nil:
			flush()
			return err
		}
		n++
		ends = append(ends, len(buf))
		if len(ends) >= chunkRecords || len(buf) >= chunkBytes || cutAtWait && br.Buffered() == 0 {
			if !flush() {
				return nil
			}
		}
	}
}

// appendLine appends the next line of br to dst without its LF or CR LF
// (a last line needs no LF), as bufio.ScanLines splits. It returns io.EOF
// when no line is left, and errLineTooLong for a line longer than max
// bytes, which it stops reading after max+2 bytes.
func appendLine(br *bufio.Reader, dst []byte, max int) ([]byte, error) {
	start := len(dst)
	for {
		frag, err := br.ReadSlice('\n')
		dst = append(dst, frag...)
		if len(dst)-start > max+2 {
			return dst[:start], errLineTooLong
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(dst) == start:
			return dst, io.EOF
		case err != nil && err != io.EOF:
			return dst[:start], err
		}
		if err == nil {
			dst = dst[:len(dst)-1]
		}
		if end := len(dst); end > start && dst[end-1] == '\r' {
			dst = dst[:end-1]
		}
		if len(dst)-start > max {
			return dst[:start], errLineTooLong
		}
		return dst, nil
	}
}
