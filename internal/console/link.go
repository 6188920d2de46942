package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// Daemon is one agent-sudod a console connects to.
type Daemon struct {
	// Name is how the human named the daemon on the command line: the
	// approver socket's path, or "ssh root@HOST". The console shows it
	// next to the host name the daemon itself sends.
	Name string
	// Dial opens a new connection to the daemon's approver channel. It is
	// called again for each reconnection.
	Dial func(ctx context.Context) (net.Conn, error)
	// Remote is set when each Dial logs in somewhere (ssh): its retries
	// back off from the first, rather than every firstRetry for a minute,
	// which would be 120 logins a minute on a host that is down.
	Remote bool
}

// Backoff of reconnection attempts: the first fastRetries retries wait
// firstRetry each, so that a console picks up a restarted daemon within a
// second (a restart, an upgrade or a reload of the units takes seconds, a
// stop with commands running up to TimeoutStopSec, 45s); after that each
// one waits twice as long as the one before, up to maxRetry, for a daemon
// that is gone for longer (stopped, its host down).
const (
	firstRetry  = 500 * time.Millisecond
	fastRetries = 120 // a minute at firstRetry
	maxRetry    = 30 * time.Second
)

// retryDelay is how long to wait before reconnection attempt n (1, 2, ...)
// to a local daemon: fast retries first, then a growing delay.
func retryDelay(n int) time.Duration { return backoff(n, fastRetries) }

// backoff is the delay before attempt n: firstRetry for the first fast
// attempts, then twice the one before, up to maxRetry.
func backoff(n, fast int) time.Duration {
	d := firstRetry
	for i := fast; i < n && d < maxRetry; i++ {
		d *= 2
	}
	return min(d, maxRetry)
}

// Messages a link sends the model, besides daemonMsg.
type (
	// linkUpMsg: the link's connection number epoch is up and the daemon
	// greeted with hello. Everything the link showed before is gone.
	linkUpMsg struct {
		link  int
		epoch uint64
		hello approval.Message
	}
	// linkDownMsg: the link's connection epoch broke (or a reconnection
	// attempt failed) with err; the next attempt, the attempt'th, is at
	// retry.
	linkDownMsg struct {
		link    int
		epoch   uint64
		err     error
		attempt int
		retry   time.Time
	}
)

// opened is a connection whose greeting has been read.
type opened struct {
	conn   net.Conn
	client *approval.Client
	hello  approval.Message
}

// open dials d and reads the daemon's greeting, within helloTimeout.
func open(ctx context.Context, d Daemon) (*opened, error) {
	conn, err := d.Dial(ctx)
	if err != nil {
		return nil, err
	}
	o, err := greet(ctx, conn)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return o, nil
}

// greet reads the greeting on conn. A greeting that does not come within
// helloTimeout, or ctx's end, interrupts the read (approval.Client.Recv:
// a connection without read deadlines is closed).
func greet(ctx context.Context, conn net.Conn) (*opened, error) {
	c := approval.NewClient(conn)
	helloCtx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	hello, err := greeting(helloCtx, c)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return &opened{conn: conn, client: c, hello: hello}, nil
}

// greeting reads the daemon's first message, which must be hello.
func greeting(ctx context.Context, c *approval.Client) (approval.Message, error) {
	m, err := c.Recv(ctx)
	switch {
	case errors.Is(err, approval.ErrHashMismatch):
		// Not a hello either: refused below.
	case errors.Is(err, approval.ErrBadMessage):
		return m, fmt.Errorf("the daemon's greeting is not a message: %s", termtext.Esc(err.Error()))
	case errors.Is(err, context.DeadlineExceeded):
		return m, fmt.Errorf("read the daemon's greeting: none came within %s", helloTimeout)
	case errors.Is(err, io.EOF):
		return m, fmt.Errorf("read the daemon's greeting: %w", ErrDisconnected)
	case err != nil:
		return m, fmt.Errorf("read the daemon's greeting: %w", err)
	}
	switch {
	case m.Type == approval.MsgResult && m.Error != "":
		return m, fmt.Errorf("agent-sudod refused this console: %s", termtext.Esc(m.Error))
	case m.Type != approval.MsgHello:
		return m, fmt.Errorf("the daemon greeted with a %q message instead of hello", termtext.Esc(m.Type))
	}
	return m, nil
}

// link is the console's connection to one daemon. Each connection it makes
// has a number (epoch, counted from 0); every line it reads is delivered
// to the model tagged with the link and the epoch, and a message the model
// sends names the epoch it is for: it goes out only on that connection,
// never on a later one, so that a decision never reaches another daemon
// instance (or another connection to the same one) than the one that
// showed the request. When a connection breaks the link tells the model,
// and, when it redials, tries again with a growing delay until ctx ends;
// otherwise the console stops.
type link struct {
	idx    int
	d      Daemon
	redial bool
	// deliver passes a message to the model (tea.Program.Send).
	deliver func(tea.Msg)
	now     func() time.Time

	mu  sync.Mutex
	cur *connection // nil while down
	// stopping is set by flush: the link takes no more messages.
	stopping bool
}

// connection is one connection of a link.
type connection struct {
	epoch  uint64
	conn   net.Conn
	outbox chan approval.Message
	closed bool // outbox closed; guarded by link.mu
	// drained is closed when everything queued in outbox was written, or
	// writing failed.
	drained chan struct{}
}

// send queues m for the link's connection epoch without blocking. It fails
// when that connection is gone (the link is down, or reconnected since), or
// is not draining.
func (l *link) send(epoch uint64, m approval.Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.cur
	if c == nil || c.epoch != epoch || c.closed {
		return errors.New("the connection to the daemon that showed it is gone; nothing was sent")
	}
	select {
	case c.outbox <- m:
		return nil
	default:
		return errors.New("the connection to the daemon is not draining")
	}
}

// flush stops the link from taking more messages and lets what is queued
// go out. The channel it returns is closed once that is done, or nil when
// the link is down.
func (l *link) flush() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopping = true
	c := l.cur
	if c == nil {
		return nil
	}
	if !c.closed {
		c.closed = true
		close(c.outbox)
	}
	return c.drained
}

// run serves the link until ctx ends (or, without redial, its first
// connection ends). first is the connection opened before the console
// started, or nil when that failed with firstErr.
func (l *link) run(ctx context.Context, first *opened, firstErr error) {
	o, err := first, firstErr
	var epoch uint64
	attempt := 0
	for {
		if o != nil {
			err = l.serve(ctx, epoch, o)
			epoch++
			attempt = 0
		}
		if ctx.Err() != nil {
			return
		}
		if !l.redial {
			l.deliver(disconnectedMsg{err})
			return
		}
		attempt++
		delay := retryDelay(attempt)
		if l.d.Remote {
			delay = backoff(attempt, 1)
		}
		l.deliver(linkDownMsg{link: l.idx, epoch: epoch, err: err, attempt: attempt, retry: l.now().Add(delay)})
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		o, err = open(ctx, l.d)
	}
}

// serve speaks on connection epoch until it breaks, and returns why: the
// greeting goes to the model, then every line read; the model's messages
// for this epoch are written in order. When it returns the connection is
// closed and nothing more can be sent on it.
func (l *link) serve(ctx context.Context, epoch uint64, o *opened) error {
	c := &connection{epoch: epoch, conn: o.conn, outbox: make(chan approval.Message, outboxSize), drained: make(chan struct{})}
	stop := context.AfterFunc(ctx, func() { _ = o.conn.Close() })
	defer stop()
	l.mu.Lock()
	if l.stopping {
		c.closed = true
		close(c.outbox)
	}
	l.cur = c
	l.mu.Unlock()
	l.deliver(linkUpMsg{link: l.idx, epoch: epoch, hello: o.hello})

	writeErr := make(chan error, 1)
	go func() {
		defer close(c.drained)
		writeLoop(o.client, c.outbox, func(err error) {
			writeErr <- err
			_ = o.conn.Close()
		})
	}()
	err := l.read(ctx, o.client, epoch)
	_ = o.conn.Close()
	l.mu.Lock()
	l.cur = nil
	if !c.closed {
		c.closed = true
		close(c.outbox)
	}
	l.mu.Unlock()
	<-c.drained
	select {
	case werr := <-writeErr:
		return werr
	default:
	}
	return err
}

// read passes each message from the daemon on connection epoch to the
// model until the channel breaks, and returns an error wrapping
// ErrDisconnected. A line that is not a message is reported and skipped;
// a request whose full text does not hash to its announced hash (the
// only place the console checks it: approval.Client.Recv) goes to the
// model as unverifiedMsg, to be neither shown nor decided; a line over
// approval.MaxLine ends the channel.
func (l *link) read(ctx context.Context, c *approval.Client, epoch uint64) error {
	for {
		m, err := c.Recv(ctx)
		switch {
		case err == nil:
			l.deliver(daemonMsg{m: m, link: l.idx, epoch: epoch})
		case errors.Is(err, approval.ErrHashMismatch):
			l.deliver(unverifiedMsg{m: m, link: l.idx, epoch: epoch})
		case errors.Is(err, approval.ErrBadMessage):
			l.deliver(daemonMsg{m: approval.Message{Type: approval.MsgResult, Error: err.Error()}, link: l.idx, epoch: epoch})
		case errors.Is(err, io.EOF):
			return ErrDisconnected
		default:
			return fmt.Errorf("%w: %w", ErrDisconnected, err)
		}
	}
}
