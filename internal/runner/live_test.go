package runner

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestCaptureTail checks that a capture remembers the last TailBytes bytes
// its stream carried and counts them all, also past the cap, where the
// captured output stops growing.
func TestCaptureTail(t *testing.T) {
	tests := [][]string{
		nil,
		{"abc"},
		{"abc", "def\n"},
		{strings.Repeat("x", TailBytes-1), "yz"},
		{strings.Repeat("x", TailBytes+10)},
		{strings.Repeat("a", 3000), strings.Repeat("b", 3000), "c"},
	}
	for _, writes := range tests {
		var c capture
		if err := c.init(100); err != nil {
			t.Fatal(err)
		}
		var all bytes.Buffer
		for _, w := range writes {
			c.add([]byte(w))
			all.WriteString(w)
		}
		want := all.Bytes()[max(0, all.Len()-TailBytes):]
		got, total := c.tail()
		if !bytes.Equal(got, want) || total != int64(all.Len()) {
			t.Errorf("writes of %d bytes: tail of %d bytes (total %d), want the last %d (total %d)",
				all.Len(), len(got), total, len(want), all.Len())
		}
		c.release()
	}
}

// TestRunLiveTail checks that a Live shows the end of the output of a
// pipeline while it runs, each stream separately, and nothing before the
// stages start or after Run returns.
func TestRunLiveTail(t *testing.T) {
	requireRoot(t)
	s := newSpec(t, ModeDirect, "root",
		cmd(t, "sh", "-c", `printf 'err0\n' >&2; printf 'one\ntwo\n'; exec sleep 30`),
		cmd(t, "sh", "-c", `printf 'err1\n' >&2; exec cat`))
	s.Live = &Live{}
	if _, ok := s.Live.Tail(); ok {
		t.Fatal("Tail before Run reported output")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *Result, 1)
	go func() {
		res, err := Run(ctx, s)
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- res
	}()
	// The output arrives when the stages write it; wait for it.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var tl Tail
	for {
		var ok bool
		tl, ok = s.Live.Tail()
		if ok && string(tl.Stdout) == "one\ntwo\n" && len(tl.Stderr) == 2 &&
			string(tl.Stderr[0]) == "err0\n" && string(tl.Stderr[1]) == "err1\n" {
			break
		}
		select {
		case <-tick.C:
		case res := <-done:
			t.Fatalf("Run returned before the output was seen (last tail %+v, result %+v)", tl, res)
		}
	}
	if tl.StdoutBytes != 8 || tl.StderrBytes[0] != 5 || tl.StderrBytes[1] != 5 {
		t.Errorf("byte counts %d %v, want 8 [5 5]", tl.StdoutBytes, tl.StderrBytes)
	}
	cancel()
	res := <-done
	if res == nil {
		t.Fatal("no result")
	}
	defer res.Release()
	if !res.TimedOut || string(res.Stdout.Copy()) != "one\ntwo\n" {
		t.Errorf("TimedOut %v stdout %q, want true and the output the Live showed", res.TimedOut, res.Stdout.Copy())
	}
	if _, ok := s.Live.Tail(); ok {
		t.Error("Tail after Run returned still reported output")
	}
	checkNoLeftovers(t)
}
