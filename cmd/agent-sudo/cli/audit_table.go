package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// table renders summaries as aligned columns. Every cell is escaped.
type table struct {
	loc *time.Location
	// daemon adds the DAEMON column, the host whose daemon wrote the
	// request's records, when several logs are read.
	daemon bool
	// wide shows every column in full (--wide). Otherwise the table has
	// the columns narrowColumns names and fits tableWidth: the ID column
	// shows the shortest prefix that tells the rows apart, and a cell too
	// long for its column is cut with an ellipsis.
	wide   bool
	widths []int // set by render, reused by row for --follow
	// idWidth is the width of the ID prefixes shown (narrow table).
	idWidth int
}

// The narrow table's bounds. Its columns are the ones a reader needs to
// find a request: when, which (the id prefix to pass to audit show), whose
// session, what became of it, who decided, how it exited and what it ran.
const (
	// tableWidth is the width the narrow table fits, that of the smallest
	// common terminal.
	tableWidth = 80
	// minIDPrefix is the shortest ID prefix shown.
	minIDPrefix = 8
	// shortTime is the narrow table's time format; --wide and show give
	// seconds and the year.
	shortTime = "01-02 15:04"
)

// Column titles.
const (
	colTime, colDaemon, colID, colUID, colSession, colHost  = "TIME", "DAEMON", "ID", "UID", "SESSION", "HOST"
	colStatus, colDecided, colExit, colDuration, colCommand = "STATUS", "DECIDED BY", "EXIT", "DURATION", "COMMAND"
)

// The narrow table is wider than tableWidth only when the ID prefixes that
// tell its rows apart leave too little room: a prefix that does not name
// one request would be of no use to audit show.

// header returns the column titles.
func (t *table) header() []string {
	var h []string
	if t.wide {
		h = []string{colTime, colID, colUID, colSession, colHost, colStatus, colDecided, colExit, colDuration, colCommand}
	} else {
		h = []string{colTime, colID, colSession, colStatus, colDecided, colExit, colCommand}
	}
	if t.daemon {
		h = slices.Insert(h, 1, colDaemon)
	}
	return h
}

func (t *table) cells(s *audit.Summary) []string {
	cmd, _ := termtext.CommandLine(s.Pipeline())
	if !t.wide {
		id := termtext.Esc(s.ID)
		if t.idWidth > 0 {
			id = prefix(id, t.idWidth)
		}
		cells := []string{
			s.Time.In(t.loc).Format(shortTime), orDash(id), orDash(termtext.Esc(s.Session)),
			termtext.Esc(s.Status), orDash(termtext.Esc(s.DecidedBy)), orDash(audit.JoinExitCodes(s.ExitCodes, ",")), orDash(cmd),
		}
		if t.daemon {
			cells = slices.Insert(cells, 1, orDash(termtext.Esc(s.DaemonHost)))
		}
		return cells
	}
	dur := "-"
	if s.Duration > 0 {
		dur = s.Duration.Round(time.Millisecond).String()
	}
	// The uid is the kernel's word for who asked; the session is a label
	// the agent chose.
	uid := "-"
	if s.Peer != nil {
		uid = strconv.FormatUint(uint64(s.Peer.UID), 10)
	}
	cells := []string{
		s.Time.In(t.loc).Format(time.DateTime), orDash(termtext.Esc(s.ID)), uid, orDash(termtext.Esc(s.Session)), orDash(termtext.Esc(s.Host)),
		termtext.Esc(s.Status), orDash(termtext.Esc(s.DecidedBy)), orDash(audit.JoinExitCodes(s.ExitCodes, ",")), dur, orDash(cmd),
	}
	if t.daemon {
		cells = slices.Insert(cells, 1, orDash(termtext.Esc(s.DaemonHost)))
	}
	return cells
}

// render returns the header and rows, aligned; the narrow table fitted to
// tableWidth.
func (t *table) render(rows []*audit.Summary) string {
	if !t.wide {
		t.idWidth = uniquePrefix(rows)
	}
	all := [][]string{t.header()}
	for _, s := range rows {
		all = append(all, t.cells(s))
	}
	t.widths = make([]int, len(all[0]))
	for _, r := range all {
		for i, c := range r {
			t.widths[i] = max(t.widths[i], termtext.Width(c))
		}
	}
	if !t.wide {
		t.fit()
	}
	var b strings.Builder
	for _, r := range all {
		b.WriteString(t.line(r))
	}
	return b.String()
}

// fit narrows the columns, in shrinkOrder, until the table is at most
// tableWidth wide, or every column is as narrow as it goes.
func (t *table) fit() {
	// Each column in turn is cut down to the width here until the table
	// fits; the command keeps 24 columns until the others are as narrow
	// as they go.
	shrinkOrder := []struct {
		col   string
		width int
	}{{colCommand, 24}, {colDecided, 10}, {colSession, 8}, {colDaemon, 8}, {colCommand, 12}}
	h := t.header()
	total := 2 * (len(t.widths) - 1)
	for _, w := range t.widths {
		total += w
	}
	for _, s := range shrinkOrder {
		i := slices.Index(h, s.col)
		if total <= tableWidth {
			break
		}
		if i < 0 || t.widths[i] <= s.width {
			continue
		}
		cut := min(total-tableWidth, t.widths[i]-s.width)
		t.widths[i] -= cut
		total -= cut
	}
}

// uniquePrefix returns the length of the shortest prefix, at least
// minIDPrefix, that tells apart the escaped ids of rows with different
// ids; a request whose id was reused keeps the same prefix as its twin.
func uniquePrefix(rows []*audit.Summary) int {
	ids := map[string]bool{}
	longest := 0
	for _, s := range rows {
		id := termtext.Esc(s.ID)
		ids[id] = true
		longest = max(longest, utf8.RuneCountInString(id))
	}
	for n := minIDPrefix; n < longest; n++ {
		seen := make(map[string]bool, len(ids))
		clash := false
		for id := range ids {
			p := prefix(id, n)
			if seen[p] {
				clash = true
				break
			}
			seen[p] = true
		}
		if !clash {
			return n
		}
	}
	return max(longest, minIDPrefix)
}

// prefix returns the first n characters of s.
func prefix(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// ellipsis ends a cut cell. It is ASCII: U+2026 takes one column on most
// terminals and two on some, and the columns would not line up on either
// if its width were guessed.
const ellipsis = "..."

// clip returns s if it is at most w columns wide, else as much of it as
// fits before an ellipsis in w columns.
func clip(s string, w int) string {
	if termtext.Width(s) <= w {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := termtext.Width(string(r))
		if used+rw > w-len(ellipsis) {
			break
		}
		b.WriteRune(r)
		used += rw
	}
	b.WriteString(ellipsis)
	return b.String()
}

// row returns one row aligned with the table already printed.
func (t *table) row(s *audit.Summary) string { return t.line(t.cells(s)) }

func (t *table) line(cells []string) string {
	var b strings.Builder
	for i, c := range cells {
		w := 0
		if i < len(t.widths) {
			w = t.widths[i]
		}
		if !t.wide && w > 0 {
			c = clip(c, w)
		}
		b.WriteString(c)
		if i == len(cells)-1 {
			break
		}
		b.WriteString(strings.Repeat(" ", max(0, w-termtext.Width(c))+2))
	}
	b.WriteString("\n")
	return b.String()
}

// rowJSON is one request in --json output.
type rowJSON struct {
	ID         string      `json:"id"`
	Session    string      `json:"session"`
	Host       string      `json:"host"`
	DaemonHost string      `json:"daemon_host,omitempty"`
	Status     string      `json:"status"`
	Time       time.Time   `json:"time"`
	DecidedBy  string      `json:"decided_by"`
	Verdict    string      `json:"verdict,omitempty"`
	ExitCodes  []int       `json:"exit_codes"`
	DurationNS int64       `json:"duration_ns,omitempty"`
	Pipeline   [][]string  `json:"pipeline"`
	Reason     string      `json:"reason,omitempty"`
	Privileged *bool       `json:"privileged,omitempty"`
	Message    string      `json:"message,omitempty"`
	Peer       *audit.Peer `json:"peer,omitempty"`
	Ref        string      `json:"ref,omitempty"`
	Location   string      `json:"location"`
}

// jsonRow returns s as one line of ASCII-only JSON.
func jsonRow(s *audit.Summary) string {
	r := rowJSON{
		ID: s.ID, Session: s.Session, Host: s.Host, DaemonHost: s.DaemonHost, Status: s.Status, Time: s.Time, DecidedBy: s.DecidedBy,
		Verdict: s.Verdict, ExitCodes: s.ExitCodes, DurationNS: int64(s.Duration),
		Message: s.Message, Peer: s.Peer, Ref: s.Ref, Location: locationOf(s),
	}
	if q := s.Request; q != nil {
		r.Pipeline, r.Reason, r.Privileged = q.Pipeline, q.Reason, q.Privileged
	}
	if r.ExitCodes == nil {
		r.ExitCodes = []int{}
	}
	if r.Pipeline == nil {
		r.Pipeline = [][]string{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		// Cannot happen: every field is a plain value.
		return fmt.Sprintf("{\"id\":%q,\"error\":%q}\n", s.ID, err.Error())
	}
	return string(termtext.ASCIIJSON(b)) + "\n"
}
