package cli

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// expiry stands in for run's --timeout on a clock the test controls: the
// context it gives run (with) ends, with context.DeadlineExceeded as a
// real timeout does, when the test calls expire, not after a duration.
type expiry struct {
	once sync.Once
	done chan struct{}
}

func newExpiry() *expiry { return &expiry{done: make(chan struct{})} }

// with is an invocation's withTimeout.
func (e *expiry) with(ctx context.Context, _ time.Duration) (context.Context, context.CancelFunc) {
	return &expiringContext{Context: ctx, e: e}, func() {}
}

// expire ends the wait, as the duration passing would.
func (e *expiry) expire() { e.once.Do(func() { close(e.done) }) }

// expiringContext is ctx until its expiry expires.
type expiringContext struct {
	context.Context
	e *expiry
}

func (c *expiringContext) Done() <-chan struct{} { return c.e.done }

func (c *expiringContext) Err() error {
	select {
	case <-c.e.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// watchWriter collects what is written to it and calls then, once, when
// it first holds want: a test acts on what the command said, never after
// a sleep.
type watchWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	want  string
	then  func()
	fired bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if !w.fired && strings.Contains(w.b.String(), w.want) {
		w.fired = true
		w.then()
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// runWatched runs the CLI as runCLI does, with no delay before run's wait
// notice, and calls then once stderr holds want.
func runWatched(t *testing.T, ctx context.Context, env map[string]string, want string, then func(), withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc), args ...string) result {
	t.Helper()
	var stdout strings.Builder
	w := &watchWriter{want: want, then: then}
	inv := &invocation{stdin: strings.NewReader(""), stdout: &stdout, stderr: w, getenv: func(k string) string { return env[k] },
		noticeDelay: time.Nanosecond, withTimeout: withTimeout}
	code := inv.main(ctx, args)
	return result{code, stdout.String(), w.String()}
}
