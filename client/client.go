// Package client talks to agent-sudod, the agent-sudo daemon, over its Unix
// socket.
//
// # Exchange
//
// Each call opens one connection, writes one request line (see package
// proto), reads one response line of any size up to
// [proto.MaxResponseBytes], and closes the connection. The write side is never
// half-closed while the answer is awaited, so the daemon can take an EOF from
// the client as "the client gave up".
//
// # Errors
//
// A response is returned, with a nil error, whatever its status: a denied,
// timed-out or failed request is an answer, not a transport failure, and the
// caller decides what it means. Errors are reserved for exchanges that did
// not produce a trustworthy answer:
//
//   - the daemon could not be reached: errors.Is(err, [ErrUnreachable]), and
//     errors.As gives an [*UnreachableError] naming the socket;
//   - the connection was reset before any answer: errors.Is(err,
//     [ErrNoAnswer]); under systemd, the daemon failed to start;
//   - ctx ended first: errors.Is(err, context.Canceled) or
//     errors.Is(err, context.DeadlineExceeded); the connection has been
//     closed, but the daemon may already have acted on the request;
//   - the request cannot be sent (not valid UTF-8, too large): a
//     [*proto.RequestError] whose Kind is [proto.ErrInvalid] or
//     [proto.ErrTooLarge]; nothing was sent;
//   - the answer breaks the protocol (no trailing newline, bad JSON, unknown
//     status, an id that does not match, a stage count that does not match
//     the pipeline, ...): errors.Is(err, [proto.ErrProtocol]);
//   - anything else is an I/O error on an established connection.
//
// # Busy daemon
//
// A daemon serving as many connections as its max_connections allows
// queues a new one; when that queue is full, or has not moved for a second,
// it answers "busy: ..." before reading a byte of it: nothing ran and
// nothing was recorded, so sending the same request again is safe. Run,
// RunRaw and Ping therefore retry a busy answer by default, with the same
// request id, a fresh time (unless the caller set one), exponential backoff
// and random jitter, a bounded number of times (by default at most
// [DefaultBusyRetries] retries and about 50 s of waiting), and never past
// ctx's end: an error wrapping ctx.Err() then says the daemon was busy and
// nothing ran. When the retries are used up, the last busy answer is
// returned as an answer, with a nil error, like any other. [IsBusy]
// recognises one. Set [Client].Busy to BusyRetry{Retries: -1} to get it at
// once, or to another [BusyRetry] to change the bounds or to count the
// retries.
//
// Only a busy answer is retried. A "rate limited: ..." answer (too many
// connections from this user this minute) names a wait that can be a
// minute long, so it is returned for the caller to decide; so is every
// answer to a request the daemon has read, since that request may have run.
package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/agent-sudo/agent-sudo/proto"
)

// DefaultSocket is where agent-sudod listens unless configured otherwise.
const DefaultSocket = "/run/agent-sudo/agent-sudo.sock"

// Client sends requests to the agent-sudod listening on Socket. It holds no
// other state, so it is safe for concurrent use (do not change its fields
// meanwhile), and its zero value talks to the daemon at DefaultSocket,
// retrying busy answers with the default bounds.
type Client struct {
	// Socket is the path of the daemon's Unix socket; empty means
	// DefaultSocket.
	Socket string
	// Busy is how a busy answer is retried; its zero fields take their
	// defaults, and Retries: -1 turns the retry off.
	Busy BusyRetry
	// Progress, when set, asks the daemon to say what a request waits for
	// (docs/protocol.md, "Progress"): it is called, on the goroutine of
	// Run, with each progress line before the response arrives, and must
	// return promptly. A daemon that predates the extension sends none.
	Progress func(proto.Progress)
}

// New returns a Client for the daemon listening on socketPath.
func New(socketPath string) *Client {
	return &Client{Socket: socketPath}
}

// Run sends req to the daemon and returns its checked answer, which may take
// minutes when a human has to approve the request. See the package
// documentation for what the error can be.
//
// Run does not modify req. It sends a copy whose ID is a fresh UUID if
// req.ID is empty and whose Time is the current time if req.Time is zero;
// set ID yourself to know it before the answer arrives (the answer echoes
// it in Response.ID).
//
// A busy answer is retried as c.Busy says (see the package documentation,
// "Busy daemon"); every attempt carries the same id.
//
// Cancelling ctx, or reaching its deadline, closes the connection promptly
// at any step, or ends the wait before a retry, and returns an error
// wrapping ctx.Err().
func (c *Client) Run(ctx context.Context, req *proto.Request) (*proto.Response, error) {
	resp, _, err := c.send(ctx, req, false)
	return resp, err
}

// RunRaw is Run that also returns the response line exactly as the daemon
// sent it, including its trailing '\n', for callers that pass it on
// verbatim. The line is returned only together with a checked response.
// It costs a second copy of the response in memory.
func (c *Client) RunRaw(ctx context.Context, req *proto.Request) (*proto.Response, []byte, error) {
	return c.send(ctx, req, true)
}

// Ping asks the daemon whether it is up and the caller may use it. The
// answer's Status says which (a daemon may deny a peer it does not serve)
// and its Version names the daemon's version; Message is "pong" and
// Access says why the caller may use it. Errors are as for Run.
func (c *Client) Ping(ctx context.Context) (*proto.Response, error) {
	return c.Run(ctx, &proto.Request{Action: proto.ActionPing})
}

// exchange is one connection's worth of Run: check and encode r, whose id
// and time send has filled in, dial, write, read, check the answer.
func (c *Client) exchange(ctx context.Context, r *proto.Request, keepRaw bool) (*proto.Response, []byte, error) {
	line, err := encodeRequest(r)
	if err != nil {
		return nil, nil, fmt.Errorf("encode request: %w", err)
	}

	socket := c.Socket
	if socket == "" {
		socket = DefaultSocket
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("connect to %s: %w", socket, ctx.Err())
		}
		return nil, nil, &UnreachableError{Socket: socket, Err: err}
	}
	defer conn.Close()
	// Closing the connection is what unblocks a write or a read, and it also
	// tells the daemon the client gave up. A second Close in the deferred
	// call is harmless.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	if _, werr := conn.Write(line); werr != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("send request: %w", ctx.Err())
		}
		// A daemon may answer and close without reading the whole request
		// (to refuse the peer, say). Its answer explains more than the
		// "broken pipe" the write got, and it is still in our receive
		// buffer.
		if resp, raw, rerr := c.readResponse(ctx, conn, r, keepRaw); rerr == nil {
			return resp, raw, nil
		}
		if errors.Is(werr, syscall.ECONNRESET) {
			return nil, nil, fmt.Errorf("%w: send request: %w", ErrNoAnswer, werr)
		}
		return nil, nil, fmt.Errorf("send request: %w", werr)
	}
	return c.readResponse(ctx, conn, r, keepRaw)
}

// encodeRequest refuses what the daemon would misread and returns the
// request line, '\n' included.
// anyClockSkew lets encodeRequest's check accept any time a request carries.
const anyClockSkew = 100 * 365 * 24 * time.Hour

func encodeRequest(r *proto.Request) ([]byte, error) {
	if err := checkRequest(r); err != nil {
		return nil, err
	}
	line, err := r.MarshalJSON()
	if err != nil {
		return nil, err
	}
	line = append(line, '\n')
	if len(line) > proto.MaxRequestBytes {
		return nil, &proto.RequestError{Kind: proto.ErrTooLarge, Detail: fmt.Sprintf(
			"the request line is %d bytes; at most %d are allowed", len(line), proto.MaxRequestBytes)}
	}
	// What the daemon would refuse as malformed is refused here, before a
	// connection is made, in the daemon's own words: the daemon's decoder
	// is the one validation. Only the time is left to the daemon, whose
	// clock decides.
	if _, err := proto.DecodeRequest(line, proto.DecodeOptions{MaxClockSkew: anyClockSkew}); err != nil {
		return nil, err
	}
	return line, nil
}

// readResponse reads and checks the answer to req from conn, passing the
// progress lines before it to c.Progress when req asked for them. With
// keepRaw it also returns the response line as read.
func (c *Client) readResponse(ctx context.Context, conn net.Conn, req *proto.Request, keepRaw bool) (*proto.Response, []byte, error) {
	// reset records a reset of the connection even when a buffered reader
	// reports it once and the next read says only EOF.
	rec := &resetRecorder{r: conn}
	var src io.Reader = rec
	var raw bytes.Buffer
	if keepRaw {
		src = io.TeeReader(rec, &raw)
	}
	var resp *proto.Response
	var err error
	skip := 0 // bytes of progress lines before the response line in raw
	if req.Progress {
		br := bufio.NewReaderSize(src, proto.MaxProgressBytes)
		for {
			var p *proto.Progress
			p, resp, err = proto.ReadProgressOrResponse(br)
			if err != nil || p == nil {
				break
			}
			if p.ID != req.ID {
				err = fmt.Errorf("%w: a progress line for request %q, not %q", proto.ErrProtocol, p.ID, req.ID)
				break
			}
			skip = raw.Len() - br.Buffered()
			if c.Progress != nil {
				c.Progress(*p)
			}
		}
	} else {
		resp, err = proto.ReadResponse(src)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("read response: %w", ctx.Err())
		}
		if rec.reset != nil {
			return nil, nil, fmt.Errorf("%w: read response: %w", ErrNoAnswer, rec.reset)
		}
		if errors.Is(err, proto.ErrProtocol) {
			return nil, nil, fmt.Errorf("read response: %w", err)
		}
		return nil, nil, err // proto already says "read response"
	}
	if err := checkResponse(req, resp); err != nil {
		return nil, nil, fmt.Errorf("read response: %w", err)
	}
	if !keepRaw {
		return resp, nil, nil
	}
	line := raw.Bytes()[skip:]
	// The first '\n' ends the line: JSON escapes any newline inside a string.
	return resp, line[:bytes.IndexByte(line, '\n')+1], nil
}

// resetRecorder is a reader that remembers a connection reset (ECONNRESET)
// its reads got.
type resetRecorder struct {
	r     io.Reader
	reset error
}

func (rr *resetRecorder) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	if err != nil && rr.reset == nil && errors.Is(err, syscall.ECONNRESET) {
		rr.reset = err
	}
	return n, err
}
