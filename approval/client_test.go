package approval

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestClientCheckHash: a pending message whose request was changed after
// it was hashed (a tampering relay) is refused with ErrHashMismatch; a
// summary, whose hash covers text it does not carry, passes. So is a
// changed full text (detail message); a detail that carries no request
// (the daemon's refusal to send it) passes.
func TestClientCheckHash(t *testing.T) {
	s := pending("k2", "/usr/bin/true").Shown()
	m := Message{Type: MsgPending, ID: s.ID, Hash: s.Hash(), Request: s}
	if err := CheckHash(m); err != nil {
		t.Fatalf("untouched pending: %v", err)
	}
	changed := *s
	changed.Reason = "something else"
	m.Request = &changed
	if err := CheckHash(m); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("changed pending: got %v, want ErrHashMismatch", err)
	}
	m.Summary = &Summary{Bytes: 1}
	if err := CheckHash(m); err != nil {
		t.Fatalf("summary: %v", err)
	}

	// The full text of a summarised request (a detail message) is checked
	// against the hash announced with the summary.
	d := Message{Type: MsgDetail, ID: s.ID, Hash: s.Hash(), Request: s}
	if err := CheckHash(d); err != nil {
		t.Fatalf("untouched detail: %v", err)
	}
	d.Request = &changed
	if err := CheckHash(d); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("changed detail: got %v, want ErrHashMismatch", err)
	}
	// A detail without a request is the daemon saying it could not send
	// the full text (Error): nothing to check, nothing shown.
	d.Request, d.Error = nil, "no longer waiting"
	if err := CheckHash(d); err != nil {
		t.Fatalf("detail without a request: %v", err)
	}
}

// noDeadlines is a net.Conn that refuses deadlines, as a connection
// through a command may.
type noDeadlines struct{ net.Conn }

func (noDeadlines) SetReadDeadline(time.Time) error  { return os.ErrNoDeadline }
func (noDeadlines) SetWriteDeadline(time.Time) error { return os.ErrNoDeadline }

// pipes is a channel that is not a net.Conn: the two ends of io.Pipes.
type pipes struct {
	*io.PipeReader
	*io.PipeWriter
}

func (p pipes) Close() error {
	return errors.Join(p.PipeReader.Close(), p.PipeWriter.Close())
}

// TestClientInterrupted: a Recv blocked on a silent daemon, and a
// SendContext blocked on a daemon that does not read, return ctx's error
// when ctx ends, whatever the channel: a net.Conn with deadlines is only
// interrupted (it can be read and written afterwards), while a net.Conn
// that refuses deadlines and a channel that is not a net.Conn are closed.
func TestClientInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name string
		// open returns the client's channel and the daemon's end.
		open   func() (io.ReadWriter, io.ReadWriteCloser)
		usable bool // the channel still works after the interruption
	}{
		{"net.Conn", func() (io.ReadWriter, io.ReadWriteCloser) {
			c, d := net.Pipe()
			return c, d
		}, true},
		{"net.Conn without deadlines", func() (io.ReadWriter, io.ReadWriteCloser) {
			c, d := net.Pipe()
			return noDeadlines{c}, d
		}, false},
		{"pipes", func() (io.ReadWriter, io.ReadWriteCloser) {
			down, toClient := io.Pipe()
			fromClient, up := io.Pipe()
			return pipes{down, up}, pipes{fromClient, toClient}
		}, false},
	} {
		for _, op := range []string{"Recv", "SendContext"} {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				rw, daemon := tc.open()
				defer daemon.Close()
				c := NewClient(rw)
				defer c.Close()
				ctx, cancel := context.WithCancel(context.Background())
				got := make(chan error, 1)
				go func() {
					var err error
					if op == "Recv" {
						_, err = c.Recv(ctx)
					} else {
						err = c.SendContext(ctx, Message{Type: MsgWatch})
					}
					got <- err
				}()
				// The pipes are synchronous: once the daemon has written
				// (or read) one byte, the Recv (or the SendContext) is
				// under way, and blocks for the rest.
				if op == "Recv" {
					_, _ = daemon.Write([]byte("{"))
				} else {
					_, _ = daemon.Read(make([]byte, 1))
				}
				cancel()
				if err := <-got; !errors.Is(err, context.Canceled) {
					t.Fatalf("%s after cancel: %v, want context.Canceled", op, err)
				}
				if !tc.usable {
					if _, err := c.Recv(context.Background()); err == nil {
						t.Fatalf("Recv on the closed channel succeeded")
					}
					return
				}
				// Both ways still work: the deadline was cleared. The
				// line that was being read is lost: what is left of it
				// (here only its newline) is not a message.
				go func() { _, _ = daemon.Write([]byte("\n" + `{"type":"hello","version":"v"}` + "\n")) }()
				if _, err := c.Recv(context.Background()); !errors.Is(err, ErrBadMessage) {
					t.Fatalf("Recv of the rest of the interrupted line: %v, want ErrBadMessage", err)
				}
				if m, err := c.Recv(context.Background()); err != nil || m.Type != MsgHello {
					t.Fatalf("Recv after the interruption: %+v %v, want the hello", m, err)
				}
				read := make(chan string, 1)
				go func() {
					line, _ := bufio.NewReader(daemon).ReadString('\n')
					read <- line
				}()
				if err := c.SendContext(context.Background(), Message{Type: MsgWatch}); err != nil {
					t.Fatalf("SendContext after the interruption: %v", err)
				}
				if line := <-read; line != `{"type":"watch"}`+"\n" {
					t.Fatalf("the daemon read %q, want one whole watch line", line)
				}
			})
		}
	}
}

// TestClientLineLimit: a line of MaxLine bytes, newline included (the
// longest the daemon sends: Channel's send), is read whole, and the next
// line after it; a line one byte longer is ErrLineTooLong, which ends the
// channel.
func TestClientLineLimit(t *testing.T) {
	testenv.SkipUnderRace(t, "16 MiB lines")
	// notMessage is a line of n bytes, newline included, that fails to
	// decode at its first byte: the limit is what is tested.
	notMessage := func(n int) io.Reader {
		return io.MultiReader(io.LimitReader(xs{}, int64(n-1)), strings.NewReader("\n"))
	}
	for _, tc := range []struct {
		name  string
		input io.Reader
		want  []error // Recv's errors, in order; nil is the hello
	}{
		{"longest", io.MultiReader(notMessage(MaxLine), strings.NewReader(helloLine)), []error{ErrBadMessage, nil, io.EOF}},
		{"too long", io.MultiReader(notMessage(MaxLine+1), strings.NewReader(helloLine)), []error{ErrLineTooLong}},
	} {
		t.Run(tc.name, func(t *testing.T) { recvAll(t, tc.input, tc.want) })
	}
}

// TestClientLines: a line that is not a message is ErrBadMessage and the
// next line is read; a last line without its newline is
// io.ErrUnexpectedEOF.
func TestClientLines(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		want  []error // Recv's errors, in order; nil is the hello
	}{
		{"not a message", "{not json\n" + helloLine, []error{ErrBadMessage, nil, io.EOF}},
		{"empty line", "\n" + helloLine, []error{ErrBadMessage, nil, io.EOF}},
		{"cut short", strings.TrimSuffix(helloLine, "\n"), []error{io.ErrUnexpectedEOF}},
	} {
		t.Run(tc.name, func(t *testing.T) { recvAll(t, strings.NewReader(tc.input), tc.want) })
	}
}

const helloLine = `{"type":"hello","version":"v"}` + "\n"

// recvAll reads input with a Client and checks Recv's errors against want,
// in order (nil: the hello).
func recvAll(t *testing.T, input io.Reader, want []error) {
	t.Helper()
	c := NewClient(struct {
		io.Reader
		io.Writer
	}{input, io.Discard})
	for i, w := range want {
		m, err := c.Recv(context.Background())
		switch {
		case w == nil && (err != nil || m.Type != MsgHello):
			t.Fatalf("Recv %d: %v, want the hello", i, err)
		case w != nil && !errors.Is(err, w):
			t.Fatalf("Recv %d: %v, want %v", i, err, w)
		}
	}
}

// xs reads as an endless run of 'x'.
type xs struct{}

var xsSlab = []byte(strings.Repeat("x", 64<<10))

func (xs) Read(p []byte) (int, error) {
	return copy(p, xsSlab), nil
}
