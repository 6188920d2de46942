package proto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress is a line the daemon writes before the response to a request
// that set "progress": true (extension; docs/protocol.md, "Progress"): it
// says what the request is waiting for, so that a client can tell its user
// and, when it gives up, say what became of the request. A progress line
// always starts with `{"progress":`, and a response line never does.
type Progress struct {
	// Progress is ProgressWaiting or ProgressRunning; a client ignores a
	// value it does not know.
	Progress string `json:"progress"`
	// ID is the request's id.
	ID string `json:"id"`
	// Consoles, with ProgressWaiting, is how many approver consoles (that
	// decide with plain decisions) are connected; the daemon sends a new
	// waiting line whenever Consoles or WebApprovers changes.
	Consoles int `json:"consoles"`
	// WebApprovers, with ProgressWaiting, is how many web approvers (an
	// approver connection that sent signed_only) are connected
	// (extension: absent means 0, and a daemon that predates it counts
	// them in Consoles).
	WebApprovers int `json:"web_approvers,omitempty"`
	// Deadline, with ProgressWaiting, is when approval_timeout passes.
	Deadline time.Time `json:"deadline,omitzero"`
}

// The progress a daemon reports.
const (
	// ProgressWaiting: no rule or grant decided; the request waits for a
	// human at an approver console. A client that closes the connection
	// now withdraws it: it will never run.
	ProgressWaiting = "waiting"
	// ProgressRunning: the request was allowed and its pipeline is
	// starting. It runs to its end even if the client goes away.
	ProgressRunning = "running"
)

// progressPrefix starts every progress line.
const progressPrefix = `{"progress":`

// MaxProgressBytes bounds one progress line, '\n' included.
const MaxProgressBytes = 4096

// WriteProgress writes p to w as one line.
func WriteProgress(w io.Writer, p Progress) error {
	line, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if len(line)+1 > MaxProgressBytes {
		return fmt.Errorf("progress line of %d bytes: at most %d", len(line)+1, MaxProgressBytes)
	}
	_, err = w.Write(append(line, '\n'))
	return err
}

// ReadProgressOrResponse reads the next line from r: a progress line, or
// the response. Exactly one of the results is set when err is nil. r must
// be the same *bufio.Reader for every line of a connection (at least
// MaxProgressBytes of buffer), since a progress line is read through its
// buffer.
func ReadProgressOrResponse(r *bufio.Reader) (*Progress, *Response, error) {
	if head, _ := r.Peek(len(progressPrefix)); !bytes.Equal(head, []byte(progressPrefix)) {
		resp, err := ReadResponse(r)
		return nil, resp, err
	}
	line, err := r.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return nil, nil, fmt.Errorf("%w: a progress line longer than %d bytes", ErrProtocol, r.Size())
		}
		return nil, nil, fmt.Errorf("%w: the connection ended in a progress line: %v", ErrProtocol, err)
	}
	var p Progress
	if err := json.Unmarshal(line, &p); err != nil {
		return nil, nil, fmt.Errorf("%w: a progress line that is not valid: %v", ErrProtocol, err)
	}
	return &p, nil, nil
}

// Describe says, in one line for the agent's user, what the request waits
// for at now; "" for a progress value it does not know.
func (p Progress) Describe(now time.Time) string {
	switch p.Progress {
	case ProgressWaiting:
		left := ""
		if !p.Deadline.IsZero() {
			left = fmt.Sprintf("; it times out in %s", max(p.Deadline.Sub(now), 0).Round(time.Second))
		}
		if p.Consoles == 0 && p.WebApprovers == 0 {
			return fmt.Sprintf("request %s waits for a human's approval, and no approver console or web approver is connected%s unless someone runs 'sudo agent-sudo approve'", p.ID, left)
		}
		return fmt.Sprintf("request %s waits for a human's approval (%s connected)%s", p.ID, p.approvers(), left)
	case ProgressRunning:
		return fmt.Sprintf("request %s was allowed; its command is running", p.ID)
	}
	return ""
}

// Brief is Describe in fewer words, the most telling first, for a line
// that a narrow terminal may cut: no id, and who could answer before how
// long is left. "" for a progress value it does not know.
func (p Progress) Brief(now time.Time) string {
	switch p.Progress {
	case ProgressWaiting:
		left := ""
		if !p.Deadline.IsZero() {
			left = fmt.Sprintf("; times out in %s", max(p.Deadline.Sub(now), 0).Round(time.Second))
		}
		if p.Consoles == 0 && p.WebApprovers == 0 {
			return "waits for approval, no approver connected (run 'sudo agent-sudo approve')" + left
		}
		return "waits for approval, " + p.approvers() + " connected" + left
	case ProgressRunning:
		return "allowed; its command is running"
	}
	return ""
}

// approvers names the approvers connected: "1 approver console",
// "2 web approvers", "1 approver console and 1 web approver".
func (p Progress) approvers() string {
	var parts []string
	if p.Consoles > 0 {
		parts = append(parts, plural(p.Consoles, "approver console"))
	}
	if p.WebApprovers > 0 {
		parts = append(parts, plural(p.WebApprovers, "web approver"))
	}
	return strings.Join(parts, " and ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Abandoned says what became of a request whose client stopped waiting for
// its answer (closed the connection) after last, the last progress line it
// read (nil: none).
func Abandoned(last *Progress) string {
	switch {
	case last != nil && last.Progress == ProgressWaiting:
		return "it was still waiting for approval, so it is withdrawn and will not run"
	case last != nil && last.Progress == ProgressRunning:
		return "its command had started, and runs to its end without you"
	}
	return "agent-sudod had not said yet whether it waited for approval: if it did, it is withdrawn and will not run; if a rule or a session grant allowed it, it runs to its end"
}
