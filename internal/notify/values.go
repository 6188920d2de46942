package notify

import (
	neturl "net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// MaxValue bounds each placeholder's replacement, in bytes, "..." included.
const MaxValue = 256

// Values are what notifiers are told of a waiting request, raw, as the
// agent sent them or the daemon found them. [Values.escaped] makes them
// what notifiers get.
type Values struct {
	// Request is the request as a human is shown it: {id}, {session},
	// {host}, {reason} and {command} are its id, session, host, reason and
	// pipeline, {user} and {uid} its peer's (from the kernel), {run_as}
	// the user it would run as. Nil reads as a request with none of them.
	Request *approval.Shown
	// WebApprover is the web approver's address (web_approver_url); {url}
	// is the link to the request there, "" when it is empty.
	WebApprover string
	// Warnings names, in a few words each, the warnings a human is shown
	// with the request (approval.Sheet.Warnings: the request's sheet
	// decides what a notification says of them); {warnings} joins them
	// with "; ", "" when there are none.
	Warnings []string
}

// Placeholders returns each placeholder's replacement, as notifiers get
// them: escaped to one line of printable text and bounded to MaxValue
// bytes.
func (v Values) Placeholders() map[string]string { return v.escaped() }

// escaped returns each placeholder's replacement: escaped to one line of
// printable text and bounded to MaxValue bytes.
func (v Values) escaped() map[string]string {
	r := v.request()
	cmd, _ := termtext.CommandLine(r.Pipeline)
	return map[string]string{
		"id":       bound(termtext.EscStrict(r.ID)),
		"session":  bound(termtext.EscStrict(r.Session)),
		"host":     bound(termtext.EscStrict(r.Host)),
		"user":     bound(termtext.EscStrict(r.Peer.User)),
		"uid":      strconv.FormatUint(uint64(r.Peer.UID), 10),
		"run_as":   bound(termtext.EscStrict(r.RunAs)),
		"command":  bound(cmd),
		"reason":   bound(termtext.Esc(r.Reason)),
		"url":      v.url(),
		"warnings": bound(termtext.Esc(strings.Join(v.Warnings, "; "))),
	}
}

// request is v.Request, or an empty request when it is nil.
func (v Values) request() *approval.Shown {
	if v.Request == nil {
		return &approval.Shown{}
	}
	return v.Request
}

// bound cuts s, an escaped text, to MaxValue bytes ending in "...", at the
// boundary of a character or of one of termtext's escapes (\\, \n, \xNN,
// \uNNNN, \UNNNNNNNN), so that an escape is never cut in two.
func bound(s string) string {
	if len(s) <= MaxValue {
		return s
	}
	const more = "..."
	end := 0
	for i := 0; i < len(s); {
		n := unitLen(s[i:])
		if i+n > MaxValue-len(more) {
			break
		}
		i += n
		end = i
	}
	return s[:end] + more
}

// unitLen is the length of the character or escape s starts with.
func unitLen(s string) int {
	if s[0] != '\\' || len(s) < 2 {
		_, n := utf8.DecodeRuneInString(s)
		return n
	}
	n := 2
	switch s[1] {
	case 'x':
		n = 4
	case 'u':
		n = 6
	case 'U':
		n = 10
	}
	return min(n, len(s))
}

// url is the link to the request on the web approver: its address and the
// request's id, query-escaped (so the value is printable ASCII and the id
// cannot add to the path or the query), and nothing else, no secret. An id
// too long for MaxValue leaves the link without it.
func (v Values) url() string {
	if v.WebApprover == "" {
		return ""
	}
	base := strings.TrimSuffix(v.WebApprover, "/") + "/"
	link := base + "?id=" + neturl.QueryEscape(v.request().ID)
	if len(link) > MaxValue {
		return bound(base)
	}
	return link
}
