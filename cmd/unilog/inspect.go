package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/store"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "show (and verify) what a data directory holds, without changing it",
		Description: `Reads the commit-log and consume-queue files directly: it runs no recovery,
takes no lock and writes nothing, so it is safe on a crashed directory and beside a
running broker (whose newest records may then show as not yet dispatched).

Prints the commit-log files (offset range, records, first and last store time), each
topic/partition's offsets and the checkpoint. --verify checks every record's CRC and
every consume-queue entry against the record it points at and exits non-zero on any
mismatch; damage before the checkpoint's flushed mark (which makes the broker refuse
to start without --recover-truncate) is named by file, position and offset. --dump TOPIC:PARTITION prints records from --from on, at most --limit.`,
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data-dir", Required: true, Usage: "data `DIR`"},
			&cli.BoolFlag{Name: "verify", Usage: "check every CRC and every consume-queue entry"},
			&cli.StringFlag{Name: "dump", Usage: "print the records of `TOPIC:PARTITION`"},
			&cli.Int64Flag{Name: "from", Usage: "first `OFFSET` to dump"},
			&cli.IntFlag{Name: "limit", Value: 20, Usage: "dump at most `N` records (0 = all)"},
		},
		Action: func(c *cli.Context) error {
			return runInspect(c.App.Writer, os.Stderr, c.String("data-dir"), c.Bool("verify"), c.String("dump"), c.Int64("from"), c.Int("limit"))
		},
	}
}

func runInspect(out, errOut io.Writer, dir string, verify bool, dump string, from int64, limit int) error {
	if dump != "" {
		i := strings.LastIndexByte(dump, ':')
		if i <= 0 {
			return fmt.Errorf("inspect: --dump %q: want TOPIC:PARTITION", dump)
		}
		p, err := strconv.ParseInt(dump[i+1:], 10, 32)
		if err != nil || p < 0 {
			return fmt.Errorf("inspect: --dump %q: bad partition", dump)
		}
		return store.Dump(dir, dump[:i], int32(p), from, limit, func(r *commitlog.Record) error {
			printRecord(out, r)
			return nil
		})
	}
	opts := store.InspectOptions{Verify: verify}
	var bar *progressbar.ProgressBar
	if f, ok := errOut.(*os.File); ok && isTerminal(f) {
		opts.Progress = func(done, total int64) {
			if bar == nil {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(f),
					progressbar.OptionSetDescription("scanning"), progressbar.OptionShowBytes(true),
					progressbar.OptionClearOnFinish())
			}
			_ = bar.Set64(done)
		}
	}
	rep, err := store.Inspect(dir, opts)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return err
	}
	printReport(out, rep, verify)
	if !rep.OK() {
		n := len(rep.Problems) + rep.MoreProblems
		if verify {
			return fmt.Errorf("inspect: %s: verification failed: %d problem(s)", dir, n)
		}
		return fmt.Errorf("inspect: %s: %d problem(s) found (see above)", dir, n)
	}
	return nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func fmtTime(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

func printReport(w io.Writer, rep *store.Report, verify bool) {
	fmt.Fprintf(w, "data directory %s\n", rep.Dir)
	if rep.Unclean {
		fmt.Fprintln(w, "state: abort file present (running, or not stopped cleanly: the next start recovers)")
	} else {
		fmt.Fprintln(w, "state: stopped cleanly")
	}
	switch {
	case errors.Is(rep.CheckpointErr, os.ErrNotExist):
		fmt.Fprintln(w, "checkpoint: none")
	case rep.CheckpointErr != nil:
		fmt.Fprintf(w, "checkpoint: unreadable: %v\n", rep.CheckpointErr)
	default:
		cp := rep.Checkpoint
		fmt.Fprintf(w, "checkpoint: commit log flushed %d, dispatched %d, at %s\n",
			cp.CommitLogFlushed, cp.Dispatched, cp.Time.Format(time.RFC3339Nano))
	}
	fmt.Fprintf(w, "\ncommit log: %d file(s), offsets [%d, %d), %d record(s), flushed mark %d\n", len(rep.Files), rep.LogMin, rep.LogEnd, rep.Records, rep.FlushedMark)
	fmt.Fprintf(w, "  %-20s  %-41s  %9s  %-24s  %-24s\n", "FILE", "RANGE", "RECORDS", "FIRST", "LAST")
	for _, f := range rep.Files {
		fmt.Fprintf(w, "  %-20s  [%d, %d) used %d  %9d  %-24s  %-24s\n", f.Name, f.Base, f.Base+f.Size, f.Used,
			f.Records, fmtTime(f.FirstTimestamp), fmtTime(f.LastTimestamp))
	}
	fmt.Fprintf(w, "\npartitions: %d\n", len(rep.Partitions))
	// A topic's queue name carries its 32-digit id (store.QueueName).
	width := 30
	for _, p := range rep.Partitions {
		width = max(width, len(p.Topic)+1+len(strconv.Itoa(int(p.Partition))))
	}
	fmt.Fprintf(w, "  %-*s  %10s  %10s  %12s  %10s\n", width, "TOPIC/PARTITION", "MIN", "MAX", "LOG NEXT", "RECORDS")
	for _, p := range rep.Partitions {
		min, max := "-", "-"
		if p.HasQueue {
			min, max = strconv.FormatInt(p.MinOffset, 10), strconv.FormatInt(p.MaxOffset, 10)
		}
		next := "-"
		if p.LogNext >= 0 {
			next = strconv.FormatInt(p.LogNext, 10)
		}
		fmt.Fprintf(w, "  %-*s  %10s  %10s  %12s  %10d\n", width, fmt.Sprintf("%s/%d", p.Topic, p.Partition), min, max, next, p.LogRecords)
	}
	if verify {
		fmt.Fprintf(w, "\nverified %d consume-queue entries (%d behind retention skipped)\n", rep.Verified, rep.Expired)
	}
	if rep.OK() {
		if verify {
			fmt.Fprintln(w, "verify: OK")
		}
		return
	}
	fmt.Fprintf(w, "\nproblems:\n")
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	if rep.MoreProblems > 0 {
		fmt.Fprintf(w, "  ... and %d more\n", rep.MoreProblems)
	}
}

func printRecord(w io.Writer, r *commitlog.Record) {
	off := strconv.FormatInt(r.QueueOffset, 10)
	if r.Count > 1 {
		off += fmt.Sprintf("..%d", r.QueueOffset+int64(r.Count)-1)
	}
	fmt.Fprintf(w, "offset %s phys %d size %d stored %s produced %s\n", off, r.PhysOffset, r.TotalSize,
		fmtTime(r.StoreTimestamp), fmtTime(r.ProducerTimestamp))
	if r.Key == nil {
		fmt.Fprintln(w, "  key: null")
	} else {
		fmt.Fprintf(w, "  key: %s\n", quote(r.Key))
	}
	for _, h := range r.Headers {
		fmt.Fprintf(w, "  header %q: %s\n", h.Key, quote(h.Value))
	}
	fmt.Fprintf(w, "  body (%d bytes): %s\n", len(r.Body), quote(r.Body))
}

// quote shows text as a Go-quoted string and anything else as hex, cut at
// 256 bytes.
func quote(b []byte) string {
	const cut = 256
	more := ""
	if len(b) > cut {
		more = fmt.Sprintf("... (%d more bytes)", len(b)-cut)
		b = b[:cut]
	}
	if utf8.Valid(b) {
		printable := true
		for _, r := range string(b) {
			if r < 0x20 && r != '\n' && r != '\t' {
				printable = false
				break
			}
		}
		if printable {
			return strconv.Quote(string(b)) + more
		}
	}
	return fmt.Sprintf("hex:%x%s", b, more)
}
