package console

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/agent-sudo/agent-sudo/internal/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// DefaultGuard is how long keys are ignored after a prompt appears.
const DefaultGuard = 500 * time.Millisecond

// maxReadLine bounds a line from the daemon. The daemon never sends a line
// longer than approval.MaxLine (newline included): pending messages and
// grant listings are bounded summaries, and a detail that would be longer
// is answered with an error. A line over the bound ends the channel, so the
// bound must not be below what the daemon can send: an agent could
// otherwise disconnect every console at will.
const maxReadLine = approval.MaxLine

// Timeouts of the channel. A console that cannot write a decision for
// writeTimeout has lost the daemon.
const (
	helloTimeout = 10 * time.Second
	writeTimeout = 10 * time.Second
	flushTimeout = 3 * time.Second
	outboxSize   = 64
)

// ErrDisconnected is the error Run returns, wrapped, when the daemon closes
// the approver channel (it stopped or restarted).
var ErrDisconnected = errors.New("agent-sudod closed the approver channel")

// Options adjust a console. The zero value is what "agent-sudo approve"
// uses.
type Options struct {
	// Guard is how long after a prompt appears keys are dropped; zero means
	// DefaultGuard. Only tests should change it.
	Guard time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Proc is the proc file system searched for a terminal multiplexer in
	// the console's ancestry; nil means the real /proc.
	Proc fs.FS
	// PID is the process whose ancestry is searched; zero means this one.
	PID int
	// Getenv reads TMUX, STY and TERM for the multiplexer warning, and
	// TERM_PROGRAM and TERM for Desktop; nil means os.Getenv.
	Getenv func(string) string
	// Desktop is whether and how a request's arrival also asks the
	// terminal for a desktop notification; "" means DesktopAuto.
	Desktop DesktopNotify
}

// Dial connects to the approver socket at path. The daemon accepts root
// only.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to the approver socket %s: %w", path, err)
	}
	return c, nil
}

// DialAndRun connects to the approver socket at path and runs a console on
// the terminal in/out until the human quits, ctx is cancelled or the daemon
// goes away. It is what agent-sudod --tty runs as its Foreground function,
// with its own terminal:
//
//	func(ctx context.Context, sock string) error {
//		return console.DialAndRun(ctx, sock, os.Stdin, os.Stdout, console.Options{})
//	}
func DialAndRun(ctx context.Context, path string, in io.Reader, out io.Writer, opts Options) error {
	conn, err := Dial(ctx, path)
	if err != nil {
		return err
	}
	return Run(ctx, conn, in, out, opts)
}

// Run runs a console over conn, a connection to the daemon's approver
// channel, on the terminal in (keys) and out (the screen), and closes conn
// when it returns. in and out are normally the same terminal as *os.File;
// Run switches it to raw mode and the alternate screen, and restores it.
//
// Run returns nil when the human quits (which decides nothing), ctx's error
// when ctx is cancelled, an error wrapping ErrDisconnected when the daemon
// closes the channel, and another error when the daemon refuses the console
// (it is not root) or breaks the protocol.
func Run(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer, opts Options) error {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 0, 64<<10), maxReadLine)
	hello, err := greeting(conn, sc)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}

	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Proc == nil {
		opts.Proc = os.DirFS("/proc")
	}
	if opts.PID == 0 {
		opts.PID = os.Getpid()
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}

	// The bell and bubbletea's renderer write to out from different
	// goroutines; one lock keeps their writes whole.
	screen := &syncWriter{w: out}
	var teaOut io.Writer = screen
	if f, ok := out.(*os.File); ok {
		// bubbletea finds the terminal (its size, raw mode) through Fd.
		teaOut = &syncFile{syncWriter: screen, f: f}
	}
	mux := DetectMultiplexer(opts.Proc, opts.PID, opts.Getenv)
	desktop := resolveDesktop(opts.Desktop, mux, opts.Getenv)
	outbox := make(chan approval.Message, outboxSize)
	// Every read from the terminal is logged, so that a key is judged by
	// the reads around it and not only by when the event loop got to it.
	reads := newReadLog(opts.Now)
	var input io.Reader
	if in != nil {
		input = reads.wrap(in)
	}
	m := newModel(config{
		now:   opts.Now,
		guard: opts.Guard,
		quiet: QuietWindow,
		alone: func(got, until time.Time, size int) bool {
			return reads.alone(got, until, size, QuietWindow)
		},
		send: func(msg approval.Message) error {
			select {
			case outbox <- msg:
				return nil
			default:
				return errors.New("the connection to the daemon is not draining")
			}
		},
		bell: func(s *approval.Shown) {
			_, _ = screen.Write(append([]byte{'\a'}, desktopSequence(desktop, mux, s)...))
		},
		renderer: lipgloss.NewRenderer(out),
		mux:      mux,
		version:  hello.Version,
	})
	p := tea.NewProgram(m,
		tea.WithContext(ctx), tea.WithInput(input), tea.WithOutput(teaOut),
		tea.WithAltScreen(), tea.WithoutSignalHandler())

	writeDone := make(chan struct{})
	go func() {
		defer close(writeDone)
		writeLoop(conn, outbox, func(err error) { p.Send(disconnectedMsg{err}) })
	}()
	go readLoop(sc, p.Send)

	final, runErr := p.Run()
	close(outbox)
	// A decision made just before quitting still goes out.
	select {
	case <-writeDone:
	case <-time.After(flushTimeout):
	}
	// Cancelling ctx also closes conn, so the channel may look broken
	// first; the cancellation is the cause.
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if fm, ok := final.(*model); ok && fm.fatal != nil {
		return fm.fatal
	}
	if runErr != nil {
		return fmt.Errorf("console: %w", runErr)
	}
	return nil
}

// greeting reads the daemon's first line, which must be hello.
func greeting(conn net.Conn, sc *bufio.Scanner) (approval.Message, error) {
	_ = conn.SetReadDeadline(time.Now().Add(helloTimeout))
	defer conn.SetReadDeadline(time.Time{}) //nolint:errcheck // best effort
	var m approval.Message
	if !sc.Scan() {
		err := sc.Err()
		if err == nil {
			err = ErrDisconnected
		}
		return m, fmt.Errorf("read the daemon's greeting: %w", err)
	}
	if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
		return m, fmt.Errorf("the daemon's greeting is not a message: %s", termtext.Esc(err.Error()))
	}
	switch {
	case m.Type == approval.MsgResult && m.Error != "":
		return m, fmt.Errorf("agent-sudod refused this console: %s", termtext.Esc(m.Error))
	case m.Type != approval.MsgHello:
		return m, fmt.Errorf("the daemon greeted with a %q message instead of hello", termtext.Esc(m.Type))
	}
	return m, nil
}

// readLoop passes each line from the daemon to send until the channel
// breaks. A line that is not a message is reported and skipped; a line over
// maxReadLine ends the channel.
func readLoop(sc *bufio.Scanner, send func(tea.Msg)) {
	for sc.Scan() {
		var m approval.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			send(daemonMsg{approval.Message{Type: approval.MsgResult, Error: "the daemon sent a line that is not a message: " + err.Error()}})
			continue
		}
		send(daemonMsg{m})
	}
	err := ErrDisconnected
	if e := sc.Err(); e != nil {
		err = fmt.Errorf("%w: %w", ErrDisconnected, e)
	}
	send(disconnectedMsg{err})
}

// writeLoop sends the console's messages in order until outbox is closed.
func writeLoop(conn net.Conn, outbox <-chan approval.Message, fail func(error)) {
	enc := json.NewEncoder(conn)
	for m := range outbox {
		_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		if err := enc.Encode(m); err != nil {
			fail(fmt.Errorf("%w: send %s: %w", ErrDisconnected, m.Type, err))
			for range outbox {
			}
			return
		}
	}
}

// syncWriter serialises writes to the terminal.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// syncFile is a syncWriter that bubbletea recognises as a terminal file.
// Closing it does nothing: the terminal belongs to the caller.
type syncFile struct {
	*syncWriter
	f *os.File
}

func (s *syncFile) Read(p []byte) (int, error) { return s.f.Read(p) }
func (s *syncFile) Close() error               { return nil }
func (s *syncFile) Fd() uintptr                { return s.f.Fd() }
