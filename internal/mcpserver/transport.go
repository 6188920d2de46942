package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agent-sudo/agent-sudo/internal/boundedline"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessage is the longest JSON-RPC message, in bytes, that [Serve]
// reads; a longer line is answered with an Invalid Request error.
const MaxMessage = mcp.DefaultMaxLineLength

// methodCancelled is the MCP notification that withdraws a call.
const methodCancelled = "notifications/cancelled"

// CutOffError reports that the client closed its input while calls were
// still in progress: each was cancelled and answered as such.
type CutOffError struct {
	// Calls is how many calls were in progress.
	Calls int
}

// Error implements error.
func (e *CutOffError) Error() string {
	calls := "1 call was"
	if e.Calls != 1 {
		calls = fmt.Sprintf("%d calls were", e.Calls)
	}
	return fmt.Sprintf("the client closed its input while %s in progress: each was cancelled and answered as cancelled; requests still waiting for approval were withdrawn, commands that had started were not stopped", calls)
}

// Serve serves one MCP session in newline-delimited JSON-RPC (MCP's stdio
// transport) on r and w until r ends or ctx ends. See the package
// documentation for how it differs from the SDK's transport.
//
// It returns a [*CutOffError] when r ended while calls were in progress,
// and ctx's error when ctx ended.
func Serve(ctx context.Context, cfg Config, r io.Reader, w io.Writer) error {
	t := &lineTransport{r: r, w: w}
	if err := Run(ctx, cfg, t); err != nil {
		return err
	}
	if n := t.cutOff(); n > 0 {
		return &CutOffError{Calls: n}
	}
	return nil
}

// lineTransport is the mcp.Transport of Serve. It connects once.
type lineTransport struct {
	r    io.Reader
	w    io.Writer
	conn *lineConn
}

// Connect implements mcp.Transport.
func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.conn != nil {
		return nil, errors.New("mcpserver: the transport is already connected")
	}
	t.conn = newLineConn(t.r, t.w)
	return t.conn, nil
}

// cutOff returns how many calls were in progress when the input ended.
func (t *lineTransport) cutOff() int {
	if t.conn == nil {
		return 0
	}
	t.conn.mu.Lock()
	defer t.conn.mu.Unlock()
	return t.conn.cutOff
}

// callState is where a call the client made stands.
type callState int

const (
	running         callState = iota // being handled
	clientCancelled                  // the client sent notifications/cancelled: no reply goes out
	cutOff                           // cancelled because the input ended: the reply goes out
)

// line is one line of input, or the error that ended the input.
type line struct {
	data    []byte
	tooLong bool
	err     error
}

// lineConn is an mcp.Connection over newline-delimited JSON-RPC that
// answers malformed lines and goes on, tracks the calls in progress so
// that it can drop the replies to cancelled calls, and at the end of its
// input cancels the calls still in progress and waits for their replies
// before it reports the end.
type lineConn struct {
	w     io.Writer
	lines chan line // from the goroutine that reads the input

	closeOnce sync.Once
	closed    chan struct{}

	// Used by Read only (the SDK reads from one goroutine).
	queue []jsonrpc.Message // cancellations made up at the end of the input
	ended error             // the error that ended the input, once it has

	writeMu sync.Mutex // serialises writes

	mu       sync.Mutex
	inFlight map[jsonrpc.ID]callState
	drained  chan struct{} // closed when inFlight empties after the input ended
	cutOff   int
}

func newLineConn(r io.Reader, w io.Writer) *lineConn {
	c := &lineConn{
		w:        w,
		lines:    make(chan line),
		closed:   make(chan struct{}),
		inFlight: make(map[jsonrpc.ID]callState),
	}
	// Reading in a goroutine lets Close unblock Read. The goroutine stays
	// blocked in r.Read until r delivers something, as the SDK's does.
	go c.readLines(r)
	return c
}

// readLines sends each line of r (without its line ending) to c.lines,
// then the error that ended r, until c closes.
func (c *lineConn) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		l := readLine(br, MaxMessage)
		select {
		case c.lines <- l:
		case <-c.closed:
			return
		}
		if l.err != nil {
			return
		}
	}
}

// readLine reads one line of at most max bytes. A longer line is read to
// its end and reported as tooLong. The last line of the input need not end
// in a newline; once nothing is left, the line carries the read error.
func readLine(br *bufio.Reader, max int) line {
	data, n, err := boundedline.Read(br, max+2) // room for "\r\n"
	tooLong := n > max+2
	switch {
	case err != nil && n > 0:
		// The last line had no newline: deliver it; the next call
		// reports the error.
	case err != nil:
		return line{err: err}
	}
	// The line goes to another goroutine while br reads on: a copy.
	return line{data: bytes.Clone(bytes.TrimRight(data, "\r\n")), tooLong: tooLong}
}

// SessionID implements mcp.Connection: a stdio session has no id.
func (c *lineConn) SessionID() string { return "" }

// Read implements mcp.Connection. It returns the next message; a line that
// is not a JSON-RPC message is answered with an error response here and
// skipped. When the input ends, Read first returns a cancellation for each
// call still in progress, then waits until every call has been answered,
// and then reports the end.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if len(c.queue) > 0 {
			msg := c.queue[0]
			c.queue = c.queue[1:]
			return msg, nil
		}
		if c.ended != nil {
			return nil, c.waitDrained(ctx)
		}
		var l line
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			c.endInput(l.err)
			continue
		}
		if len(bytes.TrimSpace(l.data)) == 0 {
			continue
		}
		msg, reply := decodeLine(l)
		if reply != nil {
			if err := c.writeRaw(reply); err != nil {
				return nil, fmt.Errorf("write an error response: %w", err)
			}
			continue
		}
		c.track(msg)
		return msg, nil
	}
}

// endInput records that the input ended with err, and queues a
// cancellation for each call still in progress: the SDK cancels a call's
// handler only on a cancellation or once Read fails, and after Read fails
// it writes no more replies.
func (c *lineConn) endInput(err error) {
	c.ended = err
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, st := range c.inFlight {
		if st != running {
			continue
		}
		c.inFlight[id] = cutOff
		c.cutOff++
		params, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": "the client closed its input"})
		c.queue = append(c.queue, &jsonrpc.Request{Method: methodCancelled, Params: params})
	}
	if len(c.inFlight) > 0 {
		c.drained = make(chan struct{})
	}
}

// waitDrained waits until every call in progress has been answered (or
// the connection closes), and returns the error that ended the input.
func (c *lineConn) waitDrained(ctx context.Context) error {
	c.mu.Lock()
	drained := c.drained
	c.mu.Unlock()
	if drained != nil {
		select {
		case <-drained:
		case <-c.closed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.ended
}

// track records a call the client made, and a cancellation of one.
func (c *lineConn) track(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.IsCall() {
		// A repeated id is refused by the SDK with a reply that has no id;
		// the first call with that id is still the one tracked.
		if _, dup := c.inFlight[req.ID]; !dup {
			c.inFlight[req.ID] = running
		}
		return
	}
	if req.Method != methodCancelled {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	if st, ok := c.inFlight[id]; ok && st == running {
		c.inFlight[id] = clientCancelled
	}
}

// Write implements mcp.Connection. The reply to a call that the client
// cancelled is dropped: the MCP specification says none is sent.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.mu.Lock()
		st, tracked := c.inFlight[resp.ID]
		if tracked {
			delete(c.inFlight, resp.ID)
			if len(c.inFlight) == 0 && c.drained != nil {
				close(c.drained)
				c.drained = nil
			}
		}
		c.mu.Unlock()
		if tracked && st == clientCancelled {
			return nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode a message: %w", err)
	}
	return c.writeRaw(data)
}

// writeRaw writes one message and its newline.
func (c *lineConn) writeRaw(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(data[:len(data):len(data)], '\n'))
	return err
}

// Close implements mcp.Connection. It unblocks Read; it does not close
// the reader or the writer, which belong to the caller of Serve.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// decodeLine decodes one line into a message, or returns the error
// response that answers it.
func decodeLine(l line) (jsonrpc.Message, []byte) {
	if l.tooLong {
		return nil, errorResponse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: the message is longer than %d bytes", MaxMessage))
	}
	if !json.Valid(l.data) {
		var v any
		err := json.Unmarshal(l.data, &v)
		return nil, errorResponse(nil, jsonrpc.CodeParseError, fmt.Sprintf("Parse error: the line is not JSON: %v", err))
	}
	if t := bytes.TrimSpace(l.data); t[0] == '[' {
		return nil, errorResponse(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported (MCP removed them in protocol version 2025-06-18); send one message per line")
	}
	msg, err := jsonrpc.DecodeMessage(l.data)
	if err != nil {
		return nil, errorResponse(requestID(l.data), jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: %v", err))
	}
	return msg, nil
}

// requestID returns the id of a JSON object that looks like a request, if
// it is a string or a number, so that an error can be matched to it.
func requestID(data []byte) json.RawMessage {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	var id any
	if json.Unmarshal(v.ID, &id) != nil {
		return nil
	}
	switch id.(type) {
	case string, float64:
		return json.RawMessage(v.ID)
	}
	return nil
}

// errorResponse encodes a JSON-RPC error response; id is nil or the raw
// JSON of the request's id.
func errorResponse(id json.RawMessage, code int, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(message) // a string always marshals
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, msg)
}
