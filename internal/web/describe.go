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
	// Approvals says, for a request that needs more than one person, how
	// many of them allowed it so far and who (escaped); Counted is set
	// when the signed-in passkey's person is one of them: the page then
	// offers no second allow, which the daemon would refuse.
	Approvals string
	Counted   string
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
		v.Approvals = fmt.Sprintf("two-person rule: needs %d different people: 0 of %d approvals so far", r.Approvals, r.Approvals)
	}
	if r.ForwardAgent {
		v.Warnings = append(v.Warnings, "forwards your SSH agent to the command")
	}
	if !r.Deadline.IsZero() {
		v.TimeLeft = r.Deadline.Sub(now).Round(time.Second).String()
	}
	return v
}

// approvedBy records on v, a request that needs need people, who allowed
// it so far (the daemon's approved message a, for v's version of the
// request), and whether me, the signed-in passkey's person on that daemon
// (approval.PublicKey.Identity), is one of them.
func (v *requestView) approvedBy(need int, a approval.Message, me string) {
	if need < 2 || a.Type != approval.MsgApproved || a.Hash != v.Hash || len(a.ApprovedBy) == 0 {
		return
	}
	who := make([]string, len(a.ApprovedBy))
	for i, b := range a.ApprovedBy {
		who[i] = esc(b)
	}
	v.Approvals = fmt.Sprintf("two-person rule: %d of %d approvals · waiting for another person · allowed by %s",
		len(a.ApprovedBy), need, strings.Join(who, ", "))
	if counted(a, v.Hash, me) {
		v.Counted = fmt.Sprintf("your allow counted (you are %s to the daemon, and it needs %d different people): another person must allow it",
			esc(me), need)
	}
}

// counted reports whether me, a person as the daemon tells people apart
// (approval.PublicKey.Identity), is among those who allowed the version
// hash of a request, by its approved message a: the daemon would refuse a
// second allow from them.
func counted(a approval.Message, hash, me string) bool {
	return me != "" && a.Type == approval.MsgApproved && a.Hash == hash && slices.Contains(a.ApprovedIdentities, me)
}
