package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/boundedline"
	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// maxConsoleLine bounds one line a console sends; decisions are small.
const maxConsoleLine = 4 << 20

// consoleWriteTimeout bounds one write to a console: a console that stops
// reading loses the channel rather than holding a goroutine forever.
const consoleWriteTimeout = 10 * time.Second

// approverChannel is the server side of the approver channel
// (docs/approver-protocol.md): it speaks the protocol with consoles and
// passes their decisions, revocations and detail requests to its broker.
// It does not accept connections nor decide who may connect: the daemon
// does both, and hands Serve only connections from root.
type approverChannel struct {
	Broker *broker
	// Version is the daemon's version, sent in the hello.
	Version string
	// Host is the daemon's host name and Instance the identifier of this
	// run of the daemon, both sent in the hello (docs/approver-protocol.md).
	Host, Instance string
	// Log receives the consoles' decisions, revocations and failures.
	Log *slog.Logger
	// Signatures takes the signed decisions (signed.go); nil refuses them.
	Signatures *approval.Signatures
}

// approverConsole identifies a console that decides, as the daemon read it: By
// names it in decisions, the log and the other consoles; Person, when set,
// is who is behind it, recorded with its decisions.
type approverConsole struct {
	By     string
	Person *approval.Person
	// Signed is set on a decision signed with a passkey: who signed it.
	Signed *approval.SignedBy
}

// Serve speaks the approver channel with one console on conn until the
// console disconnects, ctx ends or a read or write fails; failures are
// logged, not returned. who names the console in decisions and the log. The
// caller must have checked that the peer may decide (the daemon requires
// uid 0), and closes conn after Serve returns.
//
// The hello, the session grants and the requests already waiting are written
// before any live event, so a console never sees a request resolved before
// it saw it pending.
func (c *approverChannel) Serve(ctx context.Context, conn net.Conn, who approverConsole) {
	by := who.By
	log := c.Log.With("console", by)
	log.Info("console connected")
	defer log.Info("console disconnected")

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waiting, events, unsubscribe, sub := c.Broker.subscribe()
	defer unsubscribe()

	grants, omitted := c.Broker.Grants()
	greeting := append([]event{
		{Message: approval.Message{Type: approval.MsgHello, Version: c.Version, DaemonHost: c.Host, Instance: c.Instance}},
		{Message: approval.Message{Type: approval.MsgGrants, Grants: grants, GrantsOmitted: omitted}},
	}, waiting...)

	out := make(chan event, 16)
	writeErr := make(chan error, 1)
	// watching is set once the console sends watch; until then running
	// messages are not written (older consoles do not know them).
	var watching atomic.Bool
	go func() { writeErr <- writeLoop(ctx, conn, greeting, out, events, &watching) }()
	send := func(m event) bool {
		select {
		case out <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}

	readErr := make(chan error, 1)
	go func() { readErr <- c.read(ctx, conn, who, send, &watching, func() { c.Broker.markWeb(sub) }) }()
	select {
	case <-ctx.Done():
	case err := <-writeErr:
		if err != nil {
			log.Warn("approver channel: write failed", "err", err)
		}
	case err := <-readErr:
		if err != nil {
			log.Warn("approver channel: read failed", "err", err)
		}
	}
}

// writeLoop sends greeting, then the replies in out and the broker's
// events to the console, in one goroutine so lines never interleave, until
// ctx ends, a write fails or the broker drops the console for falling
// behind. The greeting is written here rather than before Serve's select,
// so that a console that does not read cannot hold Serve past ctx's end.
//
// Running messages are written only once watching is set, and never one
// older than the last written: the answer to watch (in out) and the
// broker's later listings (in events) can reach this loop in either order,
// and the console must end up with the newest.
func writeLoop(ctx context.Context, conn net.Conn, greeting []event, out <-chan event, events <-chan event, watching *atomic.Bool) error {
	var lastRunning uint64
	for _, m := range greeting {
		if ctx.Err() != nil {
			return nil
		}
		if err := writeMessage(conn, m.Message); err != nil {
			return err
		}
	}
	for {
		var m event
		select {
		case <-ctx.Done():
			return nil
		case m = <-out:
		case ev, ok := <-events:
			if !ok {
				return errors.New("console fell too far behind the daemon's events")
			}
			m = ev
		}
		if m.Type == approval.MsgRunning {
			if !watching.Load() || m.version < lastRunning {
				continue
			}
			lastRunning = m.version
		}
		if err := writeMessage(conn, m.Message); err != nil {
			return err
		}
	}
}

// writeMessage writes m as one line, within a write deadline. A line
// longer than MaxLine is never sent: a console may refuse it and would lose
// the channel. A detail that long is answered with an error instead (the
// request can then only be denied or time out); nothing else can be that
// long.
func writeMessage(conn net.Conn, m approval.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if len(b)+1 > approval.MaxLine && m.Type == approval.MsgPasskeys {
		// Not a request's answer: the passkeys message itself says why
		// it lists none, and the relay signs nobody in.
		b, err = json.Marshal(approval.Message{Type: approval.MsgPasskeys, Error: fmt.Sprintf(
			"the daemon's passkeys would make a message of %d bytes, more than the approver channel's limit of %d; none is listed (revoke some in the passkeys directory)",
			len(b), approval.MaxLine)})
		if err != nil {
			return fmt.Errorf("encode passkeys: %w", err)
		}
	} else if len(b)+1 > approval.MaxLine {
		b, err = json.Marshal(approval.Message{Type: approval.MsgResult, ID: m.ID, Error: fmt.Sprintf(
			"the %s message for request %s would be %d bytes, more than the approver channel's limit of %d; it cannot be shown here, so it cannot be allowed",
			m.Type, m.ID, len(b), approval.MaxLine)})
		if err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
	}
	_ = conn.SetWriteDeadline(time.Now().Add(consoleWriteTimeout))
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("send %s: %w", m.Type, err)
	}
	return nil
}

// read handles the console's detail, decide, revoke, watch, stop and
// output lines until it disconnects (nil) or a line cannot be read (the
// error). Each line is answered through send; a line that is not a valid
// message is answered with an error and the channel stays open. watch sets
// watching; signed_only starts sending the passkeys (watchKeys) until ctx
// ends, and calls signed once, so that the broker counts the connection as
// a web approver.
func (c *approverChannel) read(ctx context.Context, conn net.Conn, who approverConsole, sendEvent func(event) bool, watching *atomic.Bool, signed func()) error {
	send := func(m approval.Message) bool { return sendEvent(event{Message: m}) }
	by := who.By
	br := bufio.NewReaderSize(conn, 64<<10)
	signedOnly := false
	// relayHost is the host the web approver said it runs on when it went
	// signed-only: its decisions are recorded as a passkey on the web
	// approver of that host (relayedBy).
	relayHost := ""
	for {
		line, long, err := readConsoleLine(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read console line: %w", err)
		}
		if long > 0 {
			send(approval.Message{Type: approval.MsgResult, Error: fmt.Sprintf(
				"invalid message: the line is %d bytes long; a console's line may be at most %d bytes, newline included; it was ignored", long, maxConsoleLine)})
			continue
		}
		m, derr := decodeConsoleLine(line)
		if derr != nil {
			send(approval.Message{Type: approval.MsgResult, Error: "invalid message: " + derr.Error()})
			continue
		}
		reply := approval.Message{Type: approval.MsgResult, ID: m.ID}
		var startKeys approval.KeySource
		refused := signedOnly && !(m.Type == approval.MsgDetail || m.Type == approval.MsgDecide && m.Signed != nil)
		switch {
		case refused:
			err = approval.ErrUnsigned
		case m.Type == approval.MsgSignedOnly:
			// Signed-only whatever else the message says: a host that is
			// not a host name is left out of the record, never a reason
			// to stay able to decide unsigned.
			if !signedOnly {
				if relayHost, err = hostClaim(m.DaemonHost); err != nil {
					relayHost = ""
				}
				c.Log.Info("console decides only with signed decisions from now on", "console", by, "web_approver_of", relayHost, "err", err)
				startKeys, _ = c.Signatures.KeySource()
				signed()
			}
			signedOnly = true
		case m.Type == approval.MsgDecide:
			reply.Note, err = c.decide(m, who, signedOnly, relayHost)
		case m.Type == approval.MsgDetail:
			var s *approval.Shown
			if s, err = c.Broker.Detail(m.ID, m.Hash); err == nil {
				if !send(approval.Message{Type: approval.MsgDetail, ID: m.ID, Hash: m.Hash, Request: s}) {
					return nil
				}
				continue
			}
		case m.Type == approval.MsgRevoke:
			reply.Grant = m.Grant
			err = c.Broker.Revoke(m.Grant)
			c.Log.Info("console revoked grant", "grant", m.Grant, "console", by, "err", err)
		case m.Type == approval.MsgWatch:
			// Set before the listing is taken, so that no later listing
			// can be filtered out (writeLoop).
			watching.Store(true)
			rs, omitted, v := c.Broker.Running()
			if !sendEvent(event{Message: approval.Message{Type: approval.MsgRunning, Running: rs, RunningOmitted: omitted}, version: v}) {
				return nil
			}
			continue
		case m.Type == approval.MsgStop:
			reply.Run = m.Run
			err = c.Broker.Stop(m.Run, by)
			c.Log.Info("console stopped a running command", "run", m.Run, "console", by, "err", err)
		case m.Type == approval.MsgOutput:
			var o *approval.Output
			if o, err = c.Broker.Output(m.Run); err == nil {
				if !send(approval.Message{Type: approval.MsgOutput, Run: m.Run, Output: o}) {
					return nil
				}
				continue
			}
			reply.Run = m.Run
		default:
			err = fmt.Errorf("unknown message type %q: a console sends %q, %q, %q, %q, %q, %q or %q",
				m.Type, approval.MsgDecide, approval.MsgRevoke, approval.MsgDetail, approval.MsgWatch, approval.MsgStop, approval.MsgOutput, approval.MsgSignedOnly)
		}
		if err != nil {
			reply.Error = err.Error()
		} else {
			reply.OK = true
		}
		send(reply)
		if startKeys != nil {
			// After the answer to signed_only, which the console reads
			// first.
			go watchKeys(ctx, startKeys, c.Signatures.KeysPoll, send)
		}
	}
}

// readConsoleLine reads one line, without its newline, of at most
// maxConsoleLine bytes (newline included). A longer line is read to its
// end without being kept, and its length returned as long, so that it can
// be answered like any other bad line. A last line without a newline is
// taken as a line; io.EOF means the console hung up between lines.
func readConsoleLine(br *bufio.Reader) (line []byte, long int64, err error) {
	line, n, err := boundedline.Read(br, maxConsoleLine)
	switch {
	case err == io.EOF && n > 0:
	case err != nil:
		return nil, 0, err
	}
	if n > maxConsoleLine {
		return nil, int64(n), nil
	}
	return bytes.TrimSuffix(line, []byte("\n")), 0, nil
}

// decodeConsoleLine decodes a console's line as the agent socket reads a
// request (strictjson): one object, no key given twice (else a front end,
// proxy or log reading the first "decision" would see another one than the
// daemon acts on), and no escape that is not a character.
func decodeConsoleLine(line []byte) (approval.Message, error) {
	var m approval.Message
	if _, e := strictjson.Object(line); e != nil {
		return m, e
	}
	if off, esc := strictjson.LoneSurrogate(line); off >= 0 {
		return m, errors.New(strictjson.Describe(esc, off, "the line"))
	}
	if err := strictjson.Unmarshal(line, &m); err != nil {
		return m, err
	}
	return m, nil
}

// decide passes a console's decide message to the broker: a signed one
// once its signature is checked, with who signed it. The note, for the
// console's result, says when an allow was recorded but the request waits
// for another person.
//
// A signed decision is recorded by the passkey that signed it (from the
// verified signature) on the console that relayed it: "passkey "alice" on
// the web approver of HOST" when the connection is signed-only and said
// its host (relayHost), else "passkey "alice" (via <console>)". The host
// is the word of the connection's root process, which decides nothing by
// itself; the signature's relay field keeps the console as the kernel
// identified it.
func (c *approverChannel) decide(m approval.Message, who approverConsole, signedOnly bool, relayHost string) (string, error) {
	if m.Signed != nil {
		s, err := c.Signatures.Check(m.ID, m.Hash, m.Decision, m.Signed, who.By)
		if err != nil {
			c.Log.Warn("console decision refused", "id", m.ID, "decision", m.Decision, "console", who.By, "err", err)
			return "", err
		}
		by := fmt.Sprintf("passkey %q (via %s)", s.Approver, who.By)
		if signedOnly && relayHost != "" {
			by = fmt.Sprintf("passkey %q on the web approver of %s", s.Approver, relayHost)
		}
		who = approverConsole{By: by, Signed: s}
	} else if signedOnly {
		return "", approval.ErrUnsigned
	}
	note, err := c.Broker.decideNote(m.ID, m.Hash, m.Decision, m.Note, who)
	c.Log.Info("console decision", "id", m.ID, "decision", m.Decision, "console", who.By, "note", note, "err", err)
	return note, err
}

// maxHostClaim bounds the host name a signed_only message may carry.
const maxHostClaim = 253

// hostClaim checks the host a signed_only message says the web approver
// runs on: "" (none said), or a host name of letters, digits, '.', '-'
// and '_', at most maxHostClaim bytes, so that it can be recorded and
// shown as it is.
func hostClaim(h string) (string, error) {
	if len(h) > maxHostClaim {
		return "", fmt.Errorf("signed_only: the host is %d bytes long; at most %d", len(h), maxHostClaim)
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return "", fmt.Errorf("signed_only: the host %q is not a host name (letters, digits, '.', '-', '_')", h)
		}
	}
	return h, nil
}
