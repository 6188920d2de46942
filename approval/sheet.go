package approval

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The sheet: what a human judges a waiting request by, decided once. Every
// surface that shows a request (the console, the web approver's page,
// `agent-sudo audit show`, the notifiers, the MCP progress text) renders
// the same [Sheet]: the same facts, in the same order, with the same words
// and the same warnings. A sheet holds plain data and escapes nothing: each
// renderer escapes every [Part] for its medium by its [PartKind] (a
// terminal through termtext, a page as text, never as markup).

// PartKind says what a part of a value is, and so how a renderer must
// escape it.
type PartKind uint8

// The kinds of part.
const (
	// PartWords are the sheet's own text: no one else chose them.
	PartWords PartKind = iota
	// PartFree is free text the agent chose (a reason, a session, a host): a
	// renderer shows it readably (termtext.Escape).
	PartFree
	// PartExact is a name, a path, an id or a value that must be shown exactly
	// (termtext.EscapeStrict).
	PartExact
	// PartArg is one argument of a command: a renderer keeps its boundaries
	// visible (the console quotes it, termtext.Quote; the page draws each
	// in a box of its own).
	PartArg
	// PartProgram is a program's path (termtext.QuoteProgram: quoted, every
	// non-ASCII character escaped).
	PartProgram
	// PartASCII is an executable's path as /proc names it, every non-ASCII
	// character escaped (termtext.EscapeASCII).
	PartASCII
	// PartCommand is the first word of a stage of the command: an argument in
	// command position (termtext.QuoteCommand).
	PartCommand
)

// Part is one piece of a value.
type Part struct {
	Text string   `json:"text"`
	Kind PartKind `json:"kind"`
}

// Level is how an item is shown.
type Level uint8

// The levels of an item.
const (
	LevelPlain Level = iota
	// LevelBold: the command.
	LevelBold
	// LevelWarn: a warning the human must read before deciding.
	LevelWarn
	// LevelDanger: what runs as root, and a program someone else can change.
	LevelDanger
	// LevelDim: the sheet's note that something was left for the details.
	LevelDim
)

// Item keys: what an item is, for a renderer that lays some out its own
// way (the console cuts the reason, why and stdin to its lines) and for
// tests.
const (
	KeyApprovals = "approvals"
	KeyCommand   = "command"
	KeyStage     = "stage"
	KeyWritable  = "writable"
	KeyStdin     = "stdin"
	KeyStdinLine = "stdin-line"
	KeyStdinMore = "stdin-more"
	KeyGrant     = "grant"
	KeyRuns      = "runs"
	KeySSH       = "ssh agent"
	KeyWhy       = "why"
	KeyChanged   = "changed"
	KeyRequester = "requester"
	KeyAskedBy   = "asked by"
	KeyContainer = "container"
	KeyReason    = "reason"
	KeyCwd       = "cwd"
	KeyCwdWrite  = "cwd-writable"
	KeyEnvNames  = "env-names"
	KeyEnv       = "env"
	KeyAgent     = "agent"
	KeySession   = "session"
	KeyHost      = "host"
	KeyID        = "id"
	KeyTime      = "time"
)

// Item is one line of the sheet (a renderer may wrap it): a label, a value
// in parts, and how it is shown.
type Item struct {
	// Key says what the item is (the Key constants).
	Key string `json:"key"`
	// Label is the label shown beside the value; "" continues the item
	// above (a further line of the reason, of stdin, a warning under a
	// stage).
	Label string `json:"label"`
	Parts []Part `json:"parts"`
	Level Level  `json:"level"`
	// Cut, when set, says this item may be cut on a first screen that has
	// no room for all of it, and names what is then cut ("of the reason"):
	// the renderer says so with MoreText.
	Cut string `json:"cut,omitempty"`
	// Hops is, for the first screen's asked-by item, its value as the
	// requester's uid (Hops[0]) and the ancestry's parts, oldest first,
	// the requester last (Hops[1:]); ShortHops the same with long
	// executable paths shortened. A renderer without room elides hops
	// from these (the console's elision); Parts is them joined with " → ".
	Hops      [][]Part `json:"-"`
	ShortHops [][]Part `json:"-"`
	// Bytes is, for a line of stdin, how many bytes of the input it shows.
	Bytes int `json:"bytes,omitempty"`
}

// Text is the item's value with every part as it is, unescaped: for tests
// and for a medium that escapes the whole (never for a terminal or markup).
func (it Item) Text() string {
	var b strings.Builder
	for _, p := range it.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Context is what the surface knows beside the request: the daemon's host
// name, from its greeting (it overrides Shown.DaemonHost when set), and,
// for a request that needs more than one person, who allowed it so far.
type Context struct {
	DaemonHost string
	ApprovedBy []string
}

// Sheet is what a human is shown of one request, computed once by
// NewSheet. First is the first screen (what a human needs to decide, in
// that order); Details is every detail, one tap or key away; Brief is what
// a surface with the room of a line or two shows (what a notification is
// checked against); Warnings are the warnings of Details, each of which
// every surface shows in full or, in Brief, counts.
type Sheet struct {
	// Approvals is the two-person line (nil when one person is enough):
	// shown above the request, not in it.
	Approvals *Item
	First     []Item
	Details   []Item
	// shown and ctx are what the sheet was made of (Warnings).
	shown *Shown
	ctx   Context
}

// Texts of warnings and labels the human must not miss; surfaces and tests
// share them.
const (
	// WritableWarning starts the warning under a stage whose program
	// someone other than root can change, and under a working directory
	// someone other than root can write.
	WritableWarning = "⚠ NOT ROOT-ONLY:"
	WritableMeans   = "someone other than root can replace or rewrite this program; the daemon runs the file it opened and hashed, but check what it is"
	// CwdWritableMeans says, under a working directory someone other than
	// root can write, that they can change what the command finds there.
	CwdWritableMeans = "non-root can change it"
	SSHWarning       = "⚠ SSH AGENT FORWARDED: the command gets the SSH agent of the daemon's operator and can use those keys while it runs"
	// ChangedMeans follows what changed of a requester that exec'd or
	// exited after connecting.
	ChangedMeans = "; the processes shown were read later and are not verified to be who asked"
	// HostMismatch is said between the agent's claimed host and the
	// daemon's own when they differ.
	HostMismatch = " (claimed by the agent) ≠ this daemon's host "
	// KernelVerified marks the requester as the kernel vouches for it.
	KernelVerified = "kernel-verified"
)

// MoreText is how a cut is said: "… more of the reason", then how the
// medium reaches the details (the console: ": press v for all details";
// the page: the details below).
func MoreText(what string) string { return "… more " + what }

// systemBinDirs are the directories whose programs the ancestry names
// without their path when the name matches, and whose programs a stage's
// line may leave out (RepeatsCommand).
var systemBinDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"}

// IsSystemDir reports whether dir is one of the system's program
// directories.
func IsSystemDir(dir string) bool { return slices.Contains(systemBinDirs, dir) }

// small builders of parts
func w(s string) Part         { return Part{Text: s, Kind: PartWords} }
func free(s string) Part      { return Part{Text: s, Kind: PartFree} }
func exact(s string) Part     { return Part{Text: s, Kind: PartExact} }
func arg(s string) Part       { return Part{Text: s, Kind: PartArg} }
func program(s string) Part   { return Part{Text: s, Kind: PartProgram} }
func asciiPart(s string) Part { return Part{Text: s, Kind: PartASCII} }

func item(key, label string, level Level, parts ...Part) Item {
	return Item{Key: key, Label: label, Parts: parts, Level: level}
}

// NewSheet computes the sheet of s as a surface that knows c shows it.
func NewSheet(s *Shown, c Context) *Sheet {
	if c.DaemonHost == "" {
		c.DaemonHost = s.DaemonHost
	}
	sh := &Sheet{shown: s, ctx: c}
	if s.Approvals > 1 {
		a := approvalsItem(s.Approvals, c.ApprovedBy)
		sh.Approvals = &a
	}
	sh.First = firstItems(s, c)
	sh.Details = detailItems(s, c)
	return sh
}

// approvalsItem says how many of the need people a request needs have
// allowed it, and who.
func approvalsItem(need int, by []string) Item {
	if len(by) == 0 {
		return item(KeyApprovals, "", LevelBold, w(fmt.Sprintf("NEEDS %d DIFFERENT PEOPLE: 0 of %d approvals so far", need, need)))
	}
	parts := []Part{w(fmt.Sprintf("%d of %d approvals · waiting for another person · allowed by ", len(by), need))}
	for i, b := range by {
		if i > 0 {
			parts = append(parts, w(", "))
		}
		parts = append(parts, free(b))
	}
	return Item{Key: KeyApprovals, Parts: parts, Level: LevelBold}
}

// commandParts is the pipeline, each argument a part of its own, the
// stages joined by " | ".
func commandParts(p [][]string) []Part {
	var parts []Part
	for i, stage := range p {
		if i > 0 {
			parts = append(parts, w(" | "))
		}
		for j, a := range stage {
			if j > 0 {
				parts = append(parts, w(" "))
			}
			if j == 0 {
				parts = append(parts, Part{Text: a, Kind: PartCommand})
				continue
			}
			parts = append(parts, arg(a))
		}
	}
	return parts
}

// RepeatsCommand reports whether stage i's line would only repeat what the
// command shows: its program is the one file the command names, not
// reached through a symbolic link, found in a system directory (or named
// by its path), and nobody but root can change it. The first screen leaves
// such a line out; the details keep it.
func RepeatsCommand(s *Shown, i int) bool {
	stage := s.Pipeline[i]
	if i >= len(s.Programs) || len(stage) == 0 {
		return false
	}
	p := s.Programs[i]
	if len(p.Chain) != 1 || len(p.Writable) > 0 {
		return false
	}
	exe := p.Chain[0]
	if exe == stage[0] {
		return true
	}
	dir, base := path.Split(exe)
	return base == stage[0] && IsSystemDir(path.Clean(dir))
}

// stageItems adds each stage's program (its symlink chain, each hop a
// part of its own so that no name can forge a hop) and arguments, and the
// warnings of what someone other than root can change; first leaves out
// the stages that only repeat the command.
func stageItems(s *Shown, first bool) []Item {
	var out []Item
	for i, stage := range s.Pipeline {
		if first && RepeatsCommand(s, i) {
			continue
		}
		var parts []Part
		var writable []Writable
		if i < len(s.Programs) && len(s.Programs[i].Chain) > 0 {
			for j, p := range s.Programs[i].Chain {
				if j > 0 {
					parts = append(parts, w(" -> "))
				}
				parts = append(parts, program(p))
			}
			writable = s.Programs[i].Writable
		} else if len(stage) > 0 {
			parts = append(parts, program(stage[0]), w(" (the daemon did not say which program runs)"))
		}
		for _, a := range stage[min(1, len(stage)):] {
			parts = append(parts, w(" "), arg(a))
		}
		out = append(out, item(KeyStage, fmt.Sprintf("stage %d", i+1), LevelPlain, parts...))
		for _, wr := range writable {
			out = append(out, item(KeyWritable, "", LevelDanger, w(WritableWarning+" "), arg(wr.Path), w(" "), exact(wr.Why), w(": "+WritableMeans)))
		}
	}
	return out
}

// stdinItems is the stdin section: size and SHA-256 (what the decision
// binds), then the content, text line by line when it is UTF-8 text, else
// hexdump rows of 16 bytes, of at most StdinPreviewBytes bytes and
// StdinPreviewLines lines; and how much was not shown.
func stdinItems(in *StdinShown) []Item {
	// Four parts, which a surface short of room may shorten: the size,
	// " · sha256 ", the hash, what it is.
	out := []Item{item(KeyStdin, "stdin", LevelWarn, w(fmt.Sprintf("%d bytes", in.Size)), w(" · sha256 "), exact(in.SHA256), w(" · the first stage reads this"))}
	out[0].Cut = "of stdin"
	data := in.Data[:min(len(in.Data), StdinPreviewBytes)]
	shown := 0
	if IsText(in.Data) {
		n := 0
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if n == StdinPreviewLines || line == "" {
				break
			}
			it := item(KeyStdinLine, "", LevelPlain, exact(strings.TrimSuffix(line, "\n")))
			it.Cut, it.Bytes = "of stdin", len(line)
			out = append(out, it)
			n++
			shown += len(line)
		}
	} else {
		for off := 0; off < len(data) && off/16 < StdinPreviewLines; off += 16 {
			row := data[off:min(off+16, len(data))]
			it := item(KeyStdinLine, "", LevelPlain, w(fmt.Sprintf("%08x  % x", off, row)))
			it.Cut, it.Bytes = "of stdin", len(row)
			out = append(out, it)
			shown += len(row)
		}
	}
	if rest := in.Size - shown; rest > 0 {
		out = append(out, item(KeyStdinMore, "", LevelWarn, w(StdinMore(rest))))
	}
	return out
}

// Bounds of the stdin the sheet shows: the first StdinPreviewLines lines
// of text, or hexdump rows of 16 bytes, of the first StdinPreviewBytes
// bytes. A console shows the rest on a view of its own.
const (
	StdinPreviewLines = 8
	StdinPreviewBytes = 1024
)

// IsText reports whether b is UTF-8 without NUL bytes.
func IsText(b []byte) bool {
	return utf8.Valid(b) && !slices.Contains(b, 0)
}

// runsItem says who the pipeline runs as.
func runsItem(s *Shown) Item {
	switch {
	case s.Privileged:
		return item(KeyRuns, "runs", LevelDanger, w("as root"))
	case s.RunAs != "":
		return item(KeyRuns, "runs", LevelPlain, w("as "), exact(s.RunAs), w(" (unprivileged)"))
	default:
		return item(KeyRuns, "runs", LevelPlain, w(fmt.Sprintf("unprivileged, as uid %d", s.Peer.UID)))
	}
}

// middle is what both screens show between the stages and who asked: stdin,
// the grant refusal, who it runs as, the ssh agent, why.
func middle(s *Shown) []Item {
	var out []Item
	if s.Stdin != nil {
		out = append(out, stdinItems(s.Stdin)...)
	}
	if why := s.GrantRefusal(); why != "" {
		out = append(out, item(KeyGrant, "grant", LevelWarn, w("⚠ "+why)))
	}
	out = append(out, runsItem(s))
	if s.ForwardAgent {
		out = append(out, item(KeySSH, "ssh agent", LevelWarn, w(SSHWarning)))
	}
	if s.Why != "" {
		it := item(KeyWhy, "why", LevelPlain, exact(s.Why))
		it.Cut = "of why"
		out = append(out, it)
	}
	return out
}

// reasonItems is the reason, each of its lines an item of its own.
func reasonItems(s *Shown) []Item {
	var out []Item
	for i, line := range strings.Split(s.Reason, "\n") {
		label := ""
		if i == 0 {
			label = "reason"
		}
		it := item(KeyReason, label, LevelPlain, free(line))
		it.Cut = "of the reason"
		out = append(out, it)
	}
	return out
}

// cwdItems is the working directory, the way it was requested when
// symlinks led to it, and the warning when someone other than root can
// write it.
func cwdItems(s *Shown) []Item {
	parts := []Part{arg(s.Cwd)}
	if len(s.CwdChain) > 0 {
		parts = append(parts, w(" (requested as "))
		for i, h := range s.CwdChain {
			if i > 0 {
				parts = append(parts, w(" -> "))
			}
			parts = append(parts, arg(h))
		}
		parts = append(parts, w(")"))
	}
	out := []Item{item(KeyCwd, "cwd", LevelPlain, parts...)}
	for _, wr := range s.CwdWritable {
		// What it means, then why, as the daemon said it without the
		// "the directory is" the line does not need; the path only when
		// it is not the working directory shown above.
		p := []Part{w(WritableWarning + " ")}
		if wr.Path != s.Cwd {
			p = append(p, arg(wr.Path), w(" "))
		}
		p = append(p, w(CwdWritableMeans+" ("), exact(strings.TrimPrefix(wr.Why, "the directory is ")), w(")"))
		out = append(out, item(KeyCwdWrite, "", LevelWarn, p...))
	}
	return out
}

// firstItems is the first screen: the command, each stage's program
// unless the command already says it (with their warnings), stdin, who it
// runs as, why it needs a human, who asked, the reason, the directory,
// the names of the environment variables and the agent's claims.
func firstItems(s *Shown, c Context) []Item {
	out := []Item{item(KeyCommand, "command", LevelBold, commandParts(s.Pipeline)...)}
	out = append(out, stageItems(s, true)...)
	out = append(out, middle(s)...)
	out = append(out, requesterBrief(s.Peer)...)
	out = append(out, reasonItems(s)...)
	out = append(out, cwdItems(s)...)
	if keys := slices.Sorted(maps.Keys(s.Env)); len(keys) > 0 {
		var parts []Part
		for i, k := range keys {
			if i > 0 {
				parts = append(parts, w(" "))
			}
			parts = append(parts, arg(k))
		}
		out = append(out, item(KeyEnvNames, "env", LevelPlain, parts...))
	}
	// The agent's claims on one line: a host that is not the daemon's own
	// is warned about and followed by the daemon's.
	agent := item(KeyAgent, "agent", LevelPlain, w("session "), sessionPart(s.Session), w(" · host "), free(s.Host))
	if c.DaemonHost != "" && s.Host != c.DaemonHost {
		agent.Parts = append(agent.Parts, w(" (≠ "), free(c.DaemonHost), w(")"))
		agent.Level = LevelWarn
	}
	agent.Parts = append(agent.Parts, w(" · claimed by the agent"))
	agent.Cut = "of the agent's claims"
	return append(out, agent)
}

// detailItems is every detail: each stage's program, the whole reason and
// why, the environment's values, the claims, the id, the times and the
// requester.
func detailItems(s *Shown, c Context) []Item {
	out := []Item{item(KeyCommand, "command", LevelBold, commandParts(s.Pipeline)...)}
	out = append(out, stageItems(s, false)...)
	out = append(out, middle(s)...)
	out = append(out, reasonItems(s)...)
	out = append(out, cwdItems(s)...)
	for i, k := range slices.Sorted(maps.Keys(s.Env)) {
		label := ""
		if i == 0 {
			label = "env"
		}
		out = append(out, item(KeyEnv, label, LevelPlain, exact(k), w("="), arg(s.Env[k])))
	}
	out = append(out, claimedItems(s, c)...)
	out = append(out, item(KeyID, "id", LevelPlain, exact(s.ID)))
	out = append(out, item(KeyTime, "time", LevelPlain, w(fmt.Sprintf("sent %s by the agent's clock (claimed) · received %s · deadline %s",
		fmtTime(s.Time), clock(s.Received), clock(s.Deadline)))))
	return append(out, requesterItems(s.Peer)...)
}

// claimedItems are the fields the agent merely claims, marked as such:
// session, host (warned when it is not the daemon's own host name).
func claimedItems(s *Shown, c Context) []Item {
	out := []Item{item(KeySession, "session", LevelPlain, sessionPart(s.Session), w(" (claimed by the agent)"))}
	switch {
	case c.DaemonHost == "":
		out = append(out, item(KeyHost, "host", LevelPlain, free(s.Host), w(" (claimed by the agent)")))
	case s.Host == c.DaemonHost:
		out = append(out, item(KeyHost, "host", LevelPlain, free(s.Host), w(" (claimed by the agent; matches this daemon's host)")))
	default:
		out = append(out, item(KeyHost, "host", LevelWarn, free(s.Host), w(HostMismatch), free(c.DaemonHost)))
	}
	return out
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

// clock formats a daemon time of day, local.
func clock(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.Local().Format(time.TimeOnly)
}

// KeyWarnings is the key of Brief's item that names the warnings.
const KeyWarnings = "warnings"

// warningNames names each kind of warning in a few words, for Brief and
// Warnings.
var warningNames = map[string]string{
	KeyApprovals: "needs more than one person",
	KeyWritable:  "a program is NOT ROOT-ONLY",
	KeyCwdWrite:  "the directory is NOT ROOT-ONLY",
	KeyHost:      "the agent's host is not this daemon's",
	KeyChanged:   "the requester is not verified",
	KeySSH:       "SSH agent forwarded",
	KeyContainer: "from a container",
	KeyStdin:     "with stdin",
}

// Brief is what a surface with the room of a line or two shows of the
// request: the
// command, who it runs as, the reason's first line (cut when it has more,
// Item.Cut), and, when there are any, one item naming every warning of
// Details in a few words, in their order ("⚠ a program is NOT ROOT-ONLY ·
// the agent's host is not this daemon's"). It leaves out the stages'
// programs, stdin's content, why, who asked, the directory, the
// environment, the id and the times: the human reads those on a console
// or the page before deciding. No program renders it: the notifiers'
// placeholders are built from the request and [Warnings] without linking
// the sheet, and daemon's TestSheetNotify checks them against it.
func (sh *Sheet) Brief() []Item {
	var out []Item
	for _, it := range sh.Details {
		switch it.Key {
		case KeyCommand, KeyRuns:
			out = append(out, it)
		case KeyReason:
			if it.Label != "" {
				it.Cut = "" // set below when the reason has more lines
				out = append(out, it)
			} else if r := &out[len(out)-1]; r.Key == KeyReason {
				r.Cut = "of the reason"
			}
		}
	}
	if names := sh.Warnings(); len(names) > 0 {
		out = append(out, item(KeyWarnings, "warnings", LevelWarn, w("⚠ "+strings.Join(names, " · "))))
	}
	return out
}

// Warnings names the warnings of the sheet in a few words each, once per
// kind, in the order the details show them (the two-person rule first):
// Warnings(s, c) of the request it was made for.
func (sh *Sheet) Warnings() []string { return Warnings(sh.shown, sh.ctx) }

// Warnings names the warnings the sheet of s, shown where c holds, has in
// a few words each, once per kind, in the order its details show them (the
// two-person rule first). It reads s directly, so that a program that
// needs only these names (the daemon, for its notifiers) does not link
// the whole sheet; TestSheetWarnings checks that it names exactly the
// warnings of NewSheet(s, c).Details.
func Warnings(s *Shown, c Context) []string {
	if c.DaemonHost == "" {
		c.DaemonHost = s.DaemonHost
	}
	var keys []string
	if s.Approvals > 1 {
		keys = append(keys, KeyApprovals)
	}
	for _, p := range s.Programs {
		if len(p.Writable) > 0 {
			keys = append(keys, KeyWritable)
			break
		}
	}
	if s.Stdin != nil {
		keys = append(keys, KeyStdin)
	}
	if s.ForwardAgent {
		keys = append(keys, KeySSH)
	}
	if len(s.CwdWritable) > 0 {
		keys = append(keys, KeyCwdWrite)
	}
	if c.DaemonHost != "" && s.Host != c.DaemonHost {
		keys = append(keys, KeyHost)
	}
	if changedOf(s.Peer) != "" {
		keys = append(keys, KeyChanged)
	}
	if s.Peer.Container != nil {
		keys = append(keys, KeyContainer)
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = warningNames[k]
	}
	return names
}

// StdinMore says how many bytes of stdin a surface left out.
func StdinMore(rest int) string { return fmt.Sprintf("… %d more bytes not shown", rest) }

// leadKeys are the keys of Lead's items.
var leadKeys = []string{KeyCommand, KeyRuns, KeyWhy, KeyReason}

// Lead splits First for a small screen (a phone) that must show, before
// anything else, what runs, as whom, why a human is asked and the reason:
// lead is those items of First, in First's order; rest the others, in
// First's order (the stages' programs and their warnings, stdin, who
// asked, the directory, the environment's names, the agent's claims).
// Every warning stays in First: a surface shows lead and rest together.
func (sh *Sheet) Lead() (lead, rest []Item) {
	for _, it := range sh.First {
		if slices.Contains(leadKeys, it.Key) {
			lead = append(lead, it)
		} else {
			rest = append(rest, it)
		}
	}
	return lead, rest
}

// sessionPart is the session an agent claimed, or the sheet's "(none)"
// when it sent none.
func sessionPart(session string) Part {
	if session == "" {
		return w("(none)")
	}
	return free(session)
}
