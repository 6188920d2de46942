package approval_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/sheettest"
)

// term renders a part as a terminal does.
func term(p approval.Part) string {
	s, _ := approval.TermPart(p)
	return s
}

// sheetText is a sheet's items as one text, one item a line.
func sheetText(sh *approval.Sheet, items []approval.Item) string {
	var lines []string
	if sh.Approvals != nil {
		lines = append(lines, sheettest.Text(*sh.Approvals, term))
	}
	return strings.Join(lines, "\n") + "\n" + sheettest.Lines(items, term)
}

// TestSheetFacts: for each request of the table, the sheet's first screen
// and its details each say every fact and warning the request calls for.
func TestSheetFacts(t *testing.T) {
	for _, c := range sheettest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			sh := approval.NewSheet(c.Shown, c.Context)
			sheettest.Contains(t, "the first screen", sheetText(sh, sh.First), c.Facts)
			sheettest.Contains(t, "the details", sheetText(sh, sh.Details), c.Facts)
		})
	}
}

// TestSheetFirstShowsEveryWarning: every warning of the details is on the
// first screen too (the host's as the agent's line), and every warning is
// named in Brief: no surface leaves a warning one tap away.
func TestSheetFirstShowsEveryWarning(t *testing.T) {
	onFirst := map[string]string{approval.KeyHost: approval.KeyAgent}
	for _, c := range sheettest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			sh := approval.NewSheet(c.Shown, c.Context)
			for _, it := range sh.Details {
				if it.Level != approval.LevelWarn && it.Level != approval.LevelDanger {
					continue
				}
				key := it.Key
				if k, ok := onFirst[key]; ok {
					key = k
				}
				i := slices.IndexFunc(sh.First, func(f approval.Item) bool { return f.Key == key })
				if i < 0 || sh.First[i].Level != it.Level {
					t.Errorf("the details warn %q (%s), the first screen does not", it.Key, it.Text())
				}
			}
		})
	}
}

// TestSheetBrief: a limited surface's brief is exactly the command, who it
// runs as, the reason's first line (marked cut when it has more) and the
// warnings named; each case's brief facts are in it.
func TestSheetBrief(t *testing.T) {
	for _, c := range sheettest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			sh := approval.NewSheet(c.Shown, c.Context)
			brief := sh.Brief()
			var keys []string
			for _, it := range brief {
				keys = append(keys, it.Key)
			}
			want := []string{approval.KeyCommand, approval.KeyRuns, approval.KeyReason}
			if len(sh.Warnings()) > 0 {
				want = append(want, approval.KeyWarnings)
			}
			if !slices.Equal(keys, want) {
				t.Fatalf("brief items %q, want %q", keys, want)
			}
			if r := brief[2]; (r.Cut != "") != strings.Contains(c.Shown.Reason, "\n") || strings.Contains(r.Text(), "\n") {
				t.Errorf("brief reason %q cut %q, for the reason %q", r.Text(), r.Cut, c.Shown.Reason)
			}
			sheettest.Contains(t, "the brief", sheetText(sh, brief), c.Brief)
		})
	}
}

// TestSheetHostMismatch: the agent's claimed host is compared with the
// daemon's host the surface knows (its greeting) before the Shown's.
func TestSheetHostMismatch(t *testing.T) {
	s := sheettest.Base("r1")
	for _, tt := range []struct {
		daemon, shown string
		warn          bool
	}{
		{"", "devbox", false},
		{"", "vm", true},
		{"vm", "devbox", true},
		{"devbox", "vm", false},
		{"", "", false},
	} {
		s.DaemonHost = tt.shown
		sh := approval.NewSheet(s, approval.Context{DaemonHost: tt.daemon})
		i := slices.IndexFunc(sh.Details, func(it approval.Item) bool { return it.Key == approval.KeyHost })
		if got := sh.Details[i].Level == approval.LevelWarn; got != tt.warn || strings.Contains(sh.Details[i].Text(), "≠") != tt.warn {
			t.Errorf("daemon %q, shown %q: host %q warned %v, want %v", tt.daemon, tt.shown, sh.Details[i].Text(), got, tt.warn)
		}
	}
}

// TestSheetWarnings: Warnings, which reads the request directly, names
// exactly the warnings of the sheet's details, once per kind, in their
// order, the two-person rule first.
func TestSheetWarnings(t *testing.T) {
	names := map[string]string{
		approval.KeyWritable: "a program is NOT ROOT-ONLY", approval.KeyCwdWrite: "the directory is NOT ROOT-ONLY",
		approval.KeyHost: "the agent's host is not this daemon's", approval.KeyChanged: "the requester is not verified",
		approval.KeySSH: "SSH agent forwarded", approval.KeyContainer: "from a container", approval.KeyStdin: "with stdin",
	}
	// notWarnings are the items shown in a warning's colour that are not
	// warnings of the request: the grant's refusal (a consequence of one),
	// running as root (what was asked), how much of stdin is not shown.
	notWarnings := []string{approval.KeyGrant, approval.KeyRuns, approval.KeyStdinMore}
	cases := sheettest.Cases()
	all := sheettest.Base("all")
	all.Approvals, all.ForwardAgent, all.Host = 2, true, "elsewhere"
	all.Programs[0].Writable = []approval.Writable{{Path: "/usr/bin", Why: "w"}}
	all.CwdWritable = []approval.Writable{{Path: "/", Why: "w"}}
	all.Stdin = approval.NewStdinShown([]byte("x"))
	all.Peer.Ancestry.Changed = "exited"
	all.Peer.Container = &approval.Container{NS: map[string]uint64{"pid": 1}}
	cases = append(cases, sheettest.Case{Name: "every warning", Shown: all})
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			sh := approval.NewSheet(c.Shown, c.Context)
			var want []string
			if sh.Approvals != nil {
				want = append(want, "needs more than one person")
			}
			for _, it := range sh.Details {
				if it.Level != approval.LevelWarn && it.Level != approval.LevelDanger {
					continue
				}
				n := names[it.Key]
				if n == "" && !slices.Contains(notWarnings, it.Key) {
					// A warning the sheet shows that Warnings, and so a
					// notification, would not name.
					t.Errorf("the details warn with %q (%q), which Warnings does not name", it.Key, it.Text())
				}
				if n != "" && !slices.Contains(want, n) {
					want = append(want, n)
				}
			}
			if got := sh.Warnings(); !slices.Equal(got, want) {
				t.Errorf("Warnings() = %q, the details warn %q", got, want)
			}
		})
	}
}

// TestSheetWordsAreOwn: no string the agent, the system or a record chose
// is ever in a part of the sheet's own words (PartWords), which renderers
// show without escaping: a marker put in every string of a request appears
// only in parts a renderer escapes.
func TestSheetWordsAreOwn(t *testing.T) {
	const m = "\x1b[2JMARK"
	s := &approval.Shown{
		ID: m, Session: m, Host: m, Reason: m + "\n" + m, Why: m,
		Pipeline: [][]string{{m, m}, {m}},
		Programs: []approval.Program{{Chain: []string{m, m}, SHA256: m, Writable: []approval.Writable{{Path: m, Why: m}}}},
		Env:      map[string]string{m: m}, Cwd: m, CwdChain: []string{m, m},
		CwdWritable: []approval.Writable{{Path: m + "x", Why: m}}, RunAs: m,
		Stdin: &approval.StdinShown{Size: len(m), SHA256: m, Data: []byte(m + "\n" + m)},
		Peer: approval.PeerInfo{User: m, Exe: m,
			Ancestry: &approval.Ancestry{End: m, Changed: m, Hops: []approval.Hop{
				{Exe: m, Comm: m, Argv: []string{m, "sub"}}, {Exe: "/" + m + "/a/b/c/d", Comm: m}}},
			Container: &approval.Container{NS: map[string]uint64{m: 1}, Cgroup: m}},
		DaemonHost: m + "d", Approvals: 2,
	}
	sh := approval.NewSheet(s, approval.Context{DaemonHost: m + "d", ApprovedBy: []string{m}})
	items := append(append(append([]approval.Item{*sh.Approvals}, sh.First...), sh.Details...), sh.Brief()...)
	for _, it := range items {
		for _, hops := range append(append([][]approval.Part{it.Parts}, it.Hops...), it.ShortHops...) {
			for _, p := range hops {
				if p.Kind == approval.PartWords && strings.Contains(p.Text, "MARK") {
					t.Errorf("item %s has the request's text %q in its own words", it.Key, p.Text)
				}
			}
		}
	}
}
