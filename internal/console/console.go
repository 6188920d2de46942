package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/approval"
)

// DefaultGuard is how long keys are ignored after a prompt appears.
const DefaultGuard = 500 * time.Millisecond

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
	// StopsDaemon says that quitting the console stops agent-sudod (it
	// runs on the daemon's own terminal, agent-sudod --tty): the keys say
	// so, and quitting while requests wait asks for a confirmation. The
	// end of its input (EOF: the terminal hung up) ends it with an error
	// wrapping ErrHungUp; any console ends on an error reading its input.
	StopsDaemon bool
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
// goes away. It is what "agent-sudo approve --stops-daemon" runs, the
// console that agent-sudod --tty starts on its own terminal, with
// Options.StopsDaemon.
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
	o, err := greet(ctx, conn)
	if err != nil {
		_ = conn.Close()
		return err
	}
	used := false
	d := Daemon{Dial: func(context.Context) (net.Conn, error) {
		if used {
			return nil, errors.New("a console of one connection does not reconnect")
		}
		used = true
		return conn, nil
	}}
	return run(ctx, []Daemon{d}, []*opened{o}, []error{nil}, false, in, out, opts)
}

// ErrHungUp is the error Run returns, wrapped, when the input of a console
// with Options.StopsDaemon ends: its terminal hung up (a hung-up terminal
// reads as end of file).
var ErrHungUp = errors.New("the terminal's input ended: it hung up")

// ErrUnreachable is the error RunDaemons returns, wrapped, when none of the
// daemons could be reached at start.
var ErrUnreachable = errors.New("no agent-sudod could be reached")

// RunDaemons runs one console for several daemons on the terminal in and
// out (see Run). Each request and session grant is shown with the daemon it
// is from, named by its Name and the host name the daemon sent in its
// greeting, and a decision or revocation goes only to that daemon, over the
// connection that announced it.
//
// RunDaemons connects to every daemon first, at once; when none answers it
// returns an error wrapping ErrUnreachable that names each failure. A
// daemon that cannot be reached, or whose connection breaks later (it
// restarted, the host or the network went away), is shown as reconnecting
// and redialled with a growing delay; the others are not affected. What a
// broken connection showed leaves the screen at once, and a decision is
// never sent over another connection than the one that showed the request:
// after the reconnection the daemon lists again whatever still waits.
//
// It returns nil when the human quits and ctx's error when ctx is
// cancelled.
func RunDaemons(ctx context.Context, daemons []Daemon, in io.Reader, out io.Writer, opts Options) error {
	if len(daemons) == 0 {
		return errors.New("no daemon to connect to")
	}
	firsts := make([]*opened, len(daemons))
	errs := make([]error, len(daemons))
	var wg sync.WaitGroup
	for i, d := range daemons {
		wg.Go(func() { firsts[i], errs[i] = open(ctx, d) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		for _, o := range firsts {
			if o != nil {
				_ = o.conn.Close()
			}
		}
		return ctx.Err()
	}
	var failed []any
	for i, err := range errs {
		if err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", daemons[i].Name, err))
		}
	}
	if len(failed) == len(daemons) {
		if len(failed) == 1 {
			return fmt.Errorf("%w: %w", ErrUnreachable, errs[0])
		}
		// One line: each daemon and why, separated by "; ".
		return fmt.Errorf("%w: "+strings.Repeat("; %w", len(failed))[2:], append([]any{ErrUnreachable}, failed...)...)
	}
	return run(ctx, daemons, firsts, errs, true, in, out, opts)
}

// run runs the console for daemons, whose first connections are firsts (nil
// where it failed with errs' entry), redialling broken connections when
// redial is set.
func run(ctx context.Context, daemons []Daemon, firsts []*opened, errs []error, redial bool, in io.Reader, out io.Writer, opts Options) error {
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
	var cols, rows int
	if f, ok := out.(*os.File); ok {
		// bubbletea finds the terminal (its size, raw mode) through Fd.
		teaOut = &syncFile{syncWriter: screen, f: f}
		cols, rows = terminalSize(f)
	}
	mux := DetectMultiplexer(opts.Proc, opts.PID, opts.Getenv)
	desktop := resolveDesktop(opts.Desktop, mux, opts.Getenv)
	// Every read from the terminal is logged, so that a key is judged by
	// the reads around it and not only by when the event loop got to it.
	reads := newReadLog(opts.Now)
	var input io.Reader
	if in != nil {
		input = reads.wrap(in, opts.StopsDaemon)
	}
	links := make([]*link, len(daemons))
	names := make([]string, len(daemons))
	for i, d := range daemons {
		links[i] = &link{idx: i, d: d, redial: redial, now: opts.Now}
		names[i] = d.Name
	}
	m := newModel(config{
		cols:  cols,
		rows:  rows,
		now:   opts.Now,
		guard: opts.Guard,
		quiet: QuietWindow,
		alone: func(got, until time.Time, size int) bool {
			return reads.alone(got, until, size, QuietWindow)
		},
		sendTo: func(to int, epoch uint64, msg approval.Message) error {
			return links[to].send(epoch, msg)
		},
		bell: func(s *approval.Shown) {
			_, _ = screen.Write(append([]byte{'\a'}, desktopSequence(desktop, mux, s)...))
		},
		renderer: lipgloss.NewRenderer(out),
		mux:      mux,
		daemons:  names,
		// A console that stops the daemon says so, and confirms.
		stopsDaemon: opts.StopsDaemon,
	})
	p := tea.NewProgram(m,
		tea.WithContext(ctx), tea.WithInput(input), tea.WithOutput(teaOut),
		tea.WithAltScreen(), tea.WithoutSignalHandler())

	linkCtx, stopLinks := context.WithCancel(ctx)
	defer stopLinks()
	var wg sync.WaitGroup
	for i, l := range links {
		l.deliver = p.Send
		wg.Go(func() { l.run(linkCtx, firsts[i], errs[i]) })
	}

	final, runErr := p.Run()
	// A decision made just before quitting still goes out.
	flushed, cancelFlush := context.WithTimeout(context.Background(), flushTimeout)
	for _, l := range links {
		if drained := l.flush(); drained != nil {
			select {
			case <-drained:
			case <-flushed.Done():
			}
		}
	}
	cancelFlush()
	stopLinks()
	wg.Wait()
	// Cancelling ctx also closes the connections, so a channel may look
	// broken first; the cancellation is the cause.
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

// writeLoop sends the console's messages in order until outbox is closed.
// A message not written within writeTimeout, or a failed write, calls fail
// (which closes the connection: the line may be cut short) and drops the
// rest.
func writeLoop(c *approval.Client, outbox <-chan approval.Message, fail func(error)) {
	for m := range outbox {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		err := c.SendContext(ctx, m)
		cancel()
		if err != nil {
			fail(fmt.Errorf("%w: %w", ErrDisconnected, err))
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

// terminalSize is the size of the terminal f, or 0, 0 when f is not a
// terminal. The model starts at it: bubbletea draws the first frame before
// its first WindowSizeMsg.
func terminalSize(f *os.File) (cols, rows int) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}
