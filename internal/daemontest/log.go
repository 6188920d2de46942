package daemontest

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent use, whose Wait blocks until
// it holds a text: the daemon's output from two pipes, or any output a test
// reads while it is written. The zero value is an empty Buffer.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// grew, when not nil, is closed by the next Write: a Wait blocks on
	// it instead of polling.
	grew chan struct{}
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.grew != nil {
		close(b.grew)
		b.grew = nil
	}
	return b.buf.Write(p)
}

// Wait blocks until what was written contains s and returns it, or
// returns what was written and ctx's error once ctx is done.
func (b *Buffer) Wait(ctx context.Context, s string) (string, error) {
	return b.WaitCount(ctx, s, 1)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WaitLog waits until the daemon's output contains s, failing the test if
// it does not within 30s, and returns the output.
func (d *Daemon) WaitLog(s string) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs, err := d.Logs.Wait(ctx, s)
	if err != nil {
		d.t.Fatalf("agent-sudod did not log %q within 30s:\n%s", s, logs)
	}
	return logs
}

// WaitCount blocks until what was written contains s at least n times and
// returns it, or returns what was written and ctx's error once ctx is done.
func (b *Buffer) WaitCount(ctx context.Context, s string, n int) (string, error) {
	for {
		b.mu.Lock()
		if all := b.buf.String(); strings.Count(all, s) >= n {
			b.mu.Unlock()
			return all, nil
		}
		if b.grew == nil {
			b.grew = make(chan struct{})
		}
		grew := b.grew
		b.mu.Unlock()
		select {
		case <-grew:
		case <-ctx.Done():
			return b.String(), ctx.Err()
		}
	}
}
