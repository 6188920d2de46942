package web

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// requestView is one waiting request as the page shows it: the request's
// sheet (approval.NewSheet), the same facts, order, words and warnings as
// every other surface. Every string the agent or the system chose is
// escaped for a terminal first (control, bidi and invisible characters made
// visible, as the console shows them), then by html/template for the page,
// which shows it as text.
type requestView struct {
	// Link is the index of the daemon that showed it (Config.Daemons),
	// and From that daemon's label: a request id is only unique within
	// one daemon.
	Link     int
	From     string
	ID, Hash string
	// Summary is set when the request was too large to announce in full:
	// it can then only be denied here.
	Summary string
	// Lead is what a phone's first screen shows before anything else
	// (approval.Sheet.Lead: what runs, as whom, why a human is asked, the
	// reason); First the rest of the sheet's first screen; Details every
	// detail, one tap away.
	Lead, First, Details []itemView
	TimeLeft             string
	// Approvals says, for a request that needs more than one person, how
	// many of them allowed it so far and who (escaped); Counted is set
	// when the signed-in passkey's person is one of them: the page then
	// offers no second allow, which the daemon would refuse.
	Approvals string
	Counted   string
	// daemonHost is the daemon's host name from its greeting, which the
	// sheet compares with the agent's claim.
	daemonHost string
	shown      *approval.Shown
}

// itemView is one item of the sheet on the page: its label, its value's
// parts, and the classes that style it (its key, its level).
type itemView struct {
	// Class is the key's and the level's (the value's); Level the
	// level's alone (the label's).
	Key, Label, Class, Level string
	Parts                    []partView
}

// partView is one part of a value, escaped for a terminal; Class is "arg"
// for an argument or a path the page draws in a box of its own, so that
// its boundaries show.
type partView struct {
	Text, Class string
}

// Elem is the page element id of the request's section.
func (v requestView) Elem() string { return fmt.Sprintf("r-%d-%s", v.Link, v.ID) }

// esc is termtext.Esc: free text escaped readably.
func esc(s string) string { return termtext.Esc(s) }

// partOf escapes a sheet's part for the page, by its kind: the agent's
// free text readably, everything else strictly, programs and executables
// with every non-ASCII character escaped; arguments and paths are boxed.
func partOf(p approval.Part) partView {
	switch p.Kind {
	case approval.PartWords:
		return partView{Text: p.Text}
	case approval.PartFree:
		return partView{Text: esc(p.Text)}
	case approval.PartArg:
		return partView{Text: termtext.EscStrict(p.Text), Class: "arg"}
	case approval.PartProgram, approval.PartCommand:
		e, _ := termtext.EscapeASCII(p.Text)
		return partView{Text: e, Class: "arg"}
	case approval.PartASCII:
		e, _ := termtext.EscapeASCII(p.Text)
		return partView{Text: e}
	default: // PartExact, and any kind this page does not know
		return partView{Text: termtext.EscStrict(p.Text)}
	}
}

// levelClass is the class of a sheet's level.
var levelClass = map[approval.Level]string{
	approval.LevelBold: "bold", approval.LevelWarn: "warn", approval.LevelDanger: "danger", approval.LevelDim: "dim",
}

// itemOf renders one item of the sheet for the page.
func itemOf(it approval.Item) itemView {
	key := strings.ReplaceAll(it.Key, " ", "-")
	v := itemView{Key: key, Label: it.Label, Class: strings.TrimSpace(key + " " + levelClass[it.Level]), Level: levelClass[it.Level]}
	for _, p := range it.Parts {
		v.Parts = append(v.Parts, partOf(p))
	}
	return v
}

// itemsOf renders items for the page.
func itemsOf(items []approval.Item) []itemView {
	out := make([]itemView, 0, len(items))
	for _, it := range items {
		out = append(out, itemOf(it))
	}
	return out
}

// text is an item's value as one string, for a line of text (the
// two-person line).
func (v itemView) text() string {
	var b strings.Builder
	for _, p := range v.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// describe renders a pending message for the page, from daemonHost, the
// daemon's own host name (its greeting).
func describe(p approval.Message, now time.Time, daemonHost string) requestView {
	r := p.Request
	v := requestView{ID: p.ID, Hash: p.Hash, daemonHost: daemonHost, shown: r}
	if r == nil {
		v.Summary = "the daemon sent no request text"
		return v
	}
	if p.Summary != nil {
		v.Summary = fmt.Sprintf("too large to show here (%d bytes, %d stages, %d arguments): deny it here, or read it at a console",
			p.Summary.Bytes, p.Summary.Stages, p.Summary.Args)
	}
	sh := approval.NewSheet(r, approval.Context{DaemonHost: daemonHost})
	lead, rest := sh.Lead()
	v.Lead, v.First, v.Details = itemsOf(lead), itemsOf(rest), itemsOf(sh.Details)
	if sh.Approvals != nil {
		v.Approvals = itemOf(*sh.Approvals).text()
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
	if need < 2 || a.Type != approval.MsgApproved || a.Hash != v.Hash || len(a.ApprovedBy) == 0 || v.shown == nil {
		return
	}
	sh := approval.NewSheet(v.shown, approval.Context{DaemonHost: v.daemonHost, ApprovedBy: a.ApprovedBy})
	if sh.Approvals != nil {
		v.Approvals = itemOf(*sh.Approvals).text()
	}
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
