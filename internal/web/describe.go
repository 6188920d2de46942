package web

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// maxStdinPreview bounds the stdin shown on the page.
const maxStdinPreview = 1024

// requestView is one waiting request as the page shows it: the console's
// first screen, every field a plain string. Every string the agent or the
// system chose is escaped for a terminal first (control, bidi and invisible
// characters made visible, as the console shows them), then by
// html/template for the page.
type requestView struct {
	// Link is the index of the daemon that showed it (Config.Daemons),
	// and From that daemon's label: a request id is only unique within
	// one daemon.
	Link     int
	From     string
	ID, Hash string
	// Summary is set when the request was too large to announce in full:
	// it can then only be denied here.
	Summary  string
	Command  string
	Stages   []string
	RunAs    string
	Why      string
	AskedBy  string
	Reason   []string
	Cwd      string
	Env      []string
	Stdin    string
	Session  string
	Host     string
	Daemon   string
	Warnings []string
	TimeLeft string
}

// Elem is the page element id of the request's section.
func (v requestView) Elem() string { return fmt.Sprintf("r-%d-%s", v.Link, v.ID) }

func esc(s string) string {
	e, _ := termtext.Escape(s)
	return e
}

func escStrict(s string) string {
	e, _ := termtext.EscapeStrict(s)
	return e
}

// describe renders a pending message for the page.
func describe(p approval.Message, now time.Time) requestView {
	r := p.Request
	v := requestView{ID: p.ID, Hash: p.Hash}
	if r == nil {
		v.Summary = "the daemon sent no request text"
		return v
	}
	if p.Summary != nil {
		v.Summary = fmt.Sprintf("too large to show here (%d bytes, %d stages, %d arguments): deny it here, or read it at a console",
			p.Summary.Bytes, p.Summary.Stages, p.Summary.Args)
	}
	v.Command, _ = termtext.CommandLine(r.Pipeline)
	for i, prog := range r.Programs {
		var chain []string
		for _, c := range prog.Chain {
			q, _ := termtext.QuoteProgram(c)
			chain = append(chain, q)
		}
		line := fmt.Sprintf("stage %d: %s", i+1, strings.Join(chain, " → "))
		if i < len(r.Pipeline) {
			args, _ := termtext.CommandLine([][]string{r.Pipeline[i][min(1, len(r.Pipeline[i])):]})
			line += " " + args
		}
		v.Stages = append(v.Stages, line)
		for _, w := range prog.Writable {
			v.Warnings = append(v.Warnings, fmt.Sprintf("stage %d: %s: %s", i+1, escStrict(w.Path), esc(w.Why)))
		}
	}
	v.RunAs = escStrict(r.RunAs)
	if r.Privileged {
		v.RunAs += " (privileged)"
	}
	v.Why = esc(r.Why)
	v.AskedBy = fmt.Sprintf("uid %d (%s), pid %d, %s (kernel-verified)", r.Peer.UID, escStrict(r.Peer.User), r.Peer.PID, escStrict(r.Peer.Exe))
	for _, line := range strings.Split(r.Reason, "\n") {
		v.Reason = append(v.Reason, esc(line))
	}
	v.Cwd = escStrict(r.Cwd)
	for _, w := range r.CwdWritable {
		v.Warnings = append(v.Warnings, fmt.Sprintf("directory %s: %s", escStrict(w.Path), esc(w.Why)))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Env)) {
		v.Env = append(v.Env, escStrict(k)+"="+escStrict(r.Env[k]))
	}
	if st := r.Stdin; st != nil {
		data := st.Data
		cut := ""
		if len(data) > maxStdinPreview {
			data, cut = data[:maxStdinPreview], fmt.Sprintf(" … (%d bytes in all)", st.Size)
		}
		text := string(data)
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		v.Stdin = esc(text) + cut
	}
	v.Session, v.Host = esc(r.Session), esc(r.Host)
	v.Daemon = esc(r.DaemonHost)
	if r.Approvals > 1 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("two-person rule: %d different people must allow it; your allow is one of them", r.Approvals))
	}
	if r.ForwardAgent {
		v.Warnings = append(v.Warnings, "forwards your SSH agent to the command")
	}
	if !r.Deadline.IsZero() {
		v.TimeLeft = r.Deadline.Sub(now).Round(time.Second).String()
	}
	return v
}
