package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds of a command connection: how much of the command's stderr is kept
// for its error, and how long Close waits for the command to exit after
// its stdin ended before it is killed.
const (
	stderrTail  = 2 << 10
	commandExit = 5 * time.Second
)

// DialCommand starts argv (argv[0] is looked up in PATH) and returns a
// connection to it: what is written goes to its stdin, what it writes on
// stdout is read. It is how a console reaches a remote daemon through
// "ssh -T root@HOST agent-sudo approver-stdio": SSH does the authentication
// and the transport.
//
// The command runs in a session of its own, without the console's
// terminal, so that it can neither prompt on it (ssh asks for nothing it
// cannot read from the terminal) nor draw over the console. Its stderr is
// kept, the last 2 KiB, for the error a read returns once it exits: the
// read error names its exit status and its last words (ssh's "Connection
// refused", say). Close ends its stdin, waits up to 5s for it to exit, and
// then kills its process group.
func DialCommand(ctx context.Context, argv []string) (net.Conn, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command to connect through")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	c := &cmdConn{name: argv[0], r: outR, w: inW, stderr: &tail{max: stderrTail}, done: make(chan struct{})}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		outR.Close()
		inW.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	c.cmd = cmd
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// cmdConn is a connection to a command's stdin and stdout.
type cmdConn struct {
	name      string
	cmd       *exec.Cmd
	r         *os.File // the command's stdout
	w         *os.File // the command's stdin
	stderr    *tail
	done      chan struct{} // closed once the command has been waited for
	waitErr   error         // set before done is closed
	closeOnce sync.Once
}

// Read reads the command's stdout. Once the command closed it, Read
// returns an error that says how the command ended, never io.EOF alone: a
// connection through a command never ends cleanly from the console's side.
func (c *cmdConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.EOF) {
		select {
		case <-c.done:
		case <-time.After(commandExit):
		}
		return n, c.exitError()
	}
	return n, err
}

// exitError describes how the command ended, with its last stderr line.
func (c *cmdConn) exitError() error {
	status := "closed its output"
	select {
	case <-c.done:
		if c.waitErr != nil {
			status = "ended: " + c.waitErr.Error()
		} else {
			status = "exited with status 0"
		}
	default:
	}
	msg := fmt.Sprintf("%s %s", c.name, status)
	if last := c.stderr.lastLine(); last != "" {
		msg += ": " + last
	}
	return errors.New(msg)
}

func (c *cmdConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close ends the command's stdin and stdout and makes sure it exits.
func (c *cmdConn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.w.Close()
		_ = c.r.Close()
		go func() {
			select {
			case <-c.done:
			case <-time.After(commandExit):
				_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			}
		}()
	})
	return nil
}

func (c *cmdConn) LocalAddr() net.Addr  { return cmdAddr(c.name) }
func (c *cmdConn) RemoteAddr() net.Addr { return cmdAddr(c.name) }
func (c *cmdConn) SetDeadline(t time.Time) error {
	return errors.Join(c.r.SetDeadline(t), c.w.SetDeadline(t))
}
func (c *cmdConn) SetReadDeadline(t time.Time) error  { return c.r.SetReadDeadline(t) }
func (c *cmdConn) SetWriteDeadline(t time.Time) error { return c.w.SetWriteDeadline(t) }

// cmdAddr names a command connection's ends.
type cmdAddr string

func (a cmdAddr) Network() string { return "command" }
func (a cmdAddr) String() string  { return string(a) }

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lastLine returns the last non-empty line written, trimmed.
func (t *tail) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
