package approval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// Client is an approver's end of the approver channel
// (docs/approver-protocol.md): the small client for writing approvers. It
// reads the daemon's messages one at a time (Recv) and sends decisions and
// the other console messages (Decide, Detail, Watch, Send, SendContext).
// One goroutine may call Recv while others send.
//
// A Client checks what it can of what the daemon sends: a pending or detail
// message whose full request does not hash to its announced hash is
// returned with an error (ErrHashMismatch), and must not be shown nor
// decided on.
type Client struct {
	rw     io.ReadWriter
	closer io.Closer
	conn   net.Conn // set when rw is a net.Conn: Recv can then be cancelled
	br     *bufio.Reader

	wmu sync.Mutex // serialises writes so lines never interleave
}

// Dial connects to the approver socket at path (the daemon's
// approver_socket; only root may connect). The daemon's hello is the first
// message Recv returns.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to the approver channel %s: %w", path, err)
	}
	return NewClient(conn), nil
}

// NewClient speaks the approver channel over rw: a connection to the
// approver socket, or the pipes of `ssh -T root@HOST agent-sudo
// approver-stdio`. When rw is an io.Closer, Close closes it, and a Recv
// or SendContext whose ctx ends closes it too (a blocked read or write
// cannot be abandoned otherwise), except on a net.Conn that takes
// deadlines, where only that read or write is interrupted.
func NewClient(rw io.ReadWriter) *Client {
	c := &Client{rw: rw, br: bufio.NewReaderSize(rw, 64<<10)}
	if cl, ok := rw.(io.Closer); ok {
		c.closer = cl
	}
	if conn, ok := rw.(net.Conn); ok {
		c.conn = conn
	}
	return c
}

// ErrLineTooLong: the daemon sent a line longer than MaxLine, which it
// never does; the channel cannot be read further.
var ErrLineTooLong = errors.New("the daemon sent a line longer than the approver channel's limit")

// ErrBadMessage: the daemon sent a line that is not a message. The line
// has been read whole, and the channel can still be read.
var ErrBadMessage = errors.New("the daemon sent a line that is not a message")

// Recv returns the daemon's next message. It fails when the channel ends
// (io.EOF; a last line without its newline is io.ErrUnexpectedEOF), a
// line is longer than MaxLine (ErrLineTooLong), or ctx ends (ctx's error:
// the line being read is lost, and on a channel without read deadlines
// the channel is closed). A line that is not a message is an error
// wrapping ErrBadMessage, and a pending message, or a detail, whose
// request is complete but does not hash to its Hash is returned with an
// error wrapping ErrHashMismatch: after either the channel can still be
// read.
func (c *Client) Recv(ctx context.Context) (Message, error) {
	if err := ctx.Err(); err != nil {
		return Message{}, err
	}
	var line []byte
	err := c.interruptible(ctx, (net.Conn).SetReadDeadline, func() error {
		var err error
		line, err = c.readLine()
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			// Whatever the read returned, it was cut short.
			return Message{}, ctx.Err()
		}
		return Message{}, err
	}
	var m Message
	if err := strictjson.Unmarshal(line, &m); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrBadMessage, err)
	}
	if err := CheckHash(m); err != nil {
		return m, err
	}
	return m, nil
}

// readLine reads one line of at most MaxLine bytes, newline included,
// without its newline.
func (c *Client) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := c.br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			return nil, ErrLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		}
		return line[:len(line)-1], nil
	}
}

// CheckHash reports, for a pending message that carries the full request
// (no Summary) and for a detail message, whether its request hashes to its
// Hash: an error wrapping ErrHashMismatch when it does not. Other messages
// pass.
func CheckHash(m Message) error {
	switch {
	case m.Type == MsgPending && m.Summary == nil, m.Type == MsgDetail && m.Request != nil:
	default:
		return nil
	}
	if m.Request == nil {
		return fmt.Errorf("%s message for %q has no request: %w", m.Type, m.ID, ErrHashMismatch)
	}
	_, h, err := m.Request.Canonical()
	if err != nil {
		return fmt.Errorf("%s message for %q: %w: %w", m.Type, m.ID, err, ErrHashMismatch)
	}
	if h != m.Hash {
		return fmt.Errorf("%s message for %q: the request hashes to %s, not the announced %s: %w", m.Type, m.ID, h, m.Hash, ErrHashMismatch)
	}
	return nil
}

// interruptible runs op, a read or a write on the channel, so that ctx's
// end interrupts it: on a net.Conn by a deadline in the past (set with
// setDeadline, SetReadDeadline or SetWriteDeadline), and otherwise, or
// when the connection refuses the deadline, by closing the channel. Once
// op has returned, the deadline is cleared again. The error is op's: the
// caller checks ctx to tell an interruption.
func (c *Client) interruptible(ctx context.Context, setDeadline func(net.Conn, time.Time) error, op func() error) error {
	if ctx.Done() == nil {
		return op()
	}
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(interrupted)
		if c.conn != nil && setDeadline(c.conn, time.Unix(1, 0)) == nil {
			return
		}
		if c.closer != nil {
			_ = c.closer.Close()
		}
	})
	err := op()
	if !stop() {
		// The interruption has started: let it finish before the
		// deadline is cleared, or it would stay set for the next call.
		<-interrupted
		if c.conn != nil {
			_ = setDeadline(c.conn, time.Time{})
		}
	}
	return err
}

// Send writes m as one line. It blocks until the line is written; a
// channel that does not drain blocks it for good (see SendContext).
func (c *Client) Send(m Message) error {
	return c.SendContext(context.Background(), m)
}

// SendContext writes m as one line, and gives up when ctx ends first
// (a deadline on ctx is a write timeout). A write given up is an error
// wrapping ctx's, and may have left part of the line on the channel,
// which the daemon would then read as garbage: after it, close the
// Client. ctx bounds the write, not the wait for another Send to finish
// writing (sends are serialised so that lines never interleave); a line
// that was written whole is sent, even if ctx ended meanwhile.
func (c *Client) SendContext(ctx context.Context, m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("send %s: %w", m.Type, err)
	}
	err = c.interruptible(ctx, (net.Conn).SetWriteDeadline, func() error {
		_, err := c.rw.Write(append(b, '\n'))
		return err
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("send %s: %w (%w)", m.Type, ctx.Err(), err)
	}
	return fmt.Errorf("send %s: %w", m.Type, err)
}

// Decide sends a decision on the request id announced with hash. The
// daemon's answer is a result message with the same id, which Recv returns.
func (c *Client) Decide(id, hash string, choice Choice, note string) error {
	return c.Send(Message{Type: MsgDecide, ID: id, Hash: hash, Decision: choice, Note: note})
}

// Detail asks for the full text of a summarised request; the answer is a
// detail message (or a result with an error).
func (c *Client) Detail(id, hash string) error {
	return c.Send(Message{Type: MsgDetail, ID: id, Hash: hash})
}

// Watch asks for the running commands, now and whenever they change.
func (c *Client) Watch() error {
	return c.Send(Message{Type: MsgWatch})
}

// Close closes the channel when it is an io.Closer.
func (c *Client) Close() error {
	if c.closer == nil {
		return nil
	}
	return c.closer.Close()
}
