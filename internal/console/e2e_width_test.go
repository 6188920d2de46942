package console_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	"github.com/agent-sudo/agent-sudo/proto"
)

// forged is what attack H2 (b) of issue 10 left on screen in place of the
// real command: lines that read like the console's own fields.
const forged = "command    apt-get update\nruns       as asudo-agent (unprivileged)"

// hostileRequests are requests whose strings the width tables of bubbletea,
// go-runewidth and glibc (tmux) disagree on, or that try to push the
// command off screen or out of its field.
var hostileRequests = []struct {
	name   string
	arg    string // the argument of bash -c
	reason string
}{
	{"three-em dashes hide the end of the command (H2 a)",
		strings.Repeat("\u2e3b", 30) + "; id > /tmp/pwned", "update the package lists"},
	{"Yijing hexagrams in the reason forge the command (H2 b)",
		"id > /tmp/pwned", strings.Repeat(strings.Repeat("\u4dc0", 74)+"\n", 6) + forged},
	{"circled numbers (Ambiguous, 2 columns in glibc)",
		strings.Repeat("\u3248", 40) + "; id", strings.Repeat("\u3248", 200)},
	{"wide characters at the last column",
		strings.Repeat("a", 27) + strings.Repeat("日本", 30) + "; id", "x" + strings.Repeat("日本", 100)},
	{"emoji, selectors, joiners, flags and skin tones",
		strings.Repeat("❤\ufe0f👨\u200d👩🇫🇷👍🏽☺", 4) + "; id", strings.Repeat("❤\ufe0f👨\u200d👩🇫🇷👍🏽☺⚠", 20) + "\n" + forged},
	{"Hangul jamo, combining stacks, soft hyphens, tabs",
		strings.Repeat("\u1100\u1161\u11a8", 10) + "a" + strings.Repeat("\u0301", 20) + "b\u00ad\t\tc; id",
		strings.Repeat("\u1100\u1161\u11a8", 40) + "a" + strings.Repeat("\u0301", 20) + "\t\t" + forged},
	{"East Asian Ambiguous and look-alikes",
		strings.Repeat("é─·•", 20) + "; /usr/bin/p\u0430sswd", strings.Repeat("é─·•", 80)},
}

// TestE2EHostileWidthsInTmux sends hostile requests to the real daemon and
// reads them on the real console ("agent-sudo approve") in tmux at several
// terminal sizes. For each it checks, on the pane as tmux holds it: the
// header is on the first row and the command on screen (nothing scrolled
// them away); no row overflowed (tmux wrapped none: capture-pane -J joins
// nothing); the command field, read back from its rows, is exactly the
// command line, every character in order; the reason field reads back
// exactly as the escaped reason; and only one row starts with "command".
//
// Each size has a terminal of its own, started at that size: a terminal
// resized under the console rewraps the rows it holds (tmux marks them
// wrapped), and a row the console later rewrites keeps that mark, so the
// check that no row overflowed would see rows wrapped before the console
// drew them.
func TestE2EHostileWidthsInTmux(t *testing.T) {
	t.Parallel()
	needE2E(t)
	d := daemontest.Start(t, daemonConfig)
	for _, size := range [][2]int{{40, 100}, {80, 45}, {132, 40}} {
		cols, rows := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", cols, rows), func(t *testing.T) {
			hostileWidthsAt(t, d, cols, rows)
		})
	}
}

// hostileWidthsAt is TestE2EHostileWidthsInTmux at one terminal size, with
// a console of its own, which is gone when it returns.
func hostileWidthsAt(t *testing.T, d *daemontest.Daemon, cols, rows int) {
	tm := startApprove(t, d, cols, rows)
	// The console has drawn at this size when its separator spans it.
	separator := "\n" + strings.Repeat("-", cols-1) + "\n"
	tm.WaitFor(separator)
	for _, tt := range hostileRequests {
		r := ask(t, d, &proto.Request{Pipeline: [][]string{{"bash", "-c", tt.arg}}, Reason: tt.reason, Session: "e2e"})
		line, _ := termtext.CommandLine([][]string{{"bash", "-c", tt.arg}})
		var parts []string
		for _, p := range strings.Split(tt.reason, "\n") {
			e, _ := termtext.Escape(p)
			parts = append(parts, e)
		}
		reason := strings.Join(parts, "\n")
		screen := tm.Wait(func(s string) bool {
			// The prompt is drawn after the body: the frame is complete.
			return fieldReadsAs(s, "command", line, false) && strings.Contains(s, "> Deny") && strings.Contains(s, separator)
		}, "show the whole command line and the prompt")
		where := fmt.Sprintf("%s at %dx%d", tt.name, cols, rows)
		// One tmux command line: the pane cannot change in between.
		both := tm.Run("capture-pane", "-p", "-t", tm.Name, ";", "capture-pane", "-p", "-J", "-t", tm.Name)
		if rows, joined := tmuxRows(both); !slices.Equal(rows[:len(rows)/2], joined) {
			t.Errorf("%s: a row overflowed and tmux wrapped it:\n%s", where, both)
		}
		lines := strings.Split(screen, "\n")
		if !strings.HasPrefix(lines[0], "agent-sudo approve · ") {
			t.Errorf("%s: the header is not on the first row:\n%s", where, screen)
		}
		if parts, _ := screenField(screen, "reason"); parts == nil && !strings.Contains(screen, "PgUp/PgDn)") && !strings.Contains(screen, "PgUp/PgDn scroll --") {
			t.Errorf("%s: no reason on screen, and no scroll indicator:\n%s", where, screen)
		} else if parts != nil && !fieldReadsAs(screen, "reason", reason, true) {
			t.Errorf("%s: the reason field does not read as\n%q\nscreen:\n%s", where, reason, screen)
		}
		if n := strings.Count("\n"+screen, "\ncommand"); n != 1 {
			t.Errorf("%s: %d rows start with \"command\":\n%s", where, n, screen)
		}
		if t.Failed() {
			t.Logf("%s: the screen:\n%s", where, screen)
			r.Cancel()
			return
		}
		// The client gives up; the console drops the request.
		r.Cancel()
		tm.WaitFor("waiting for requests…")
	}
}

// screenField returns the rows of the field label on a screen in the
// console's wide layout, trailing blanks removed, one list per line of the
// value: the label's row and the rows that continue it ("↳" in the label
// column), then for each further line of the value (free text split at
// "\n") a row with a blank label column and its continuations. cut is true
// when the field runs into the end of the page, or the first screen shows
// only its first lines.
func screenField(screen, label string) (parts [][]string, cut bool) {
	const labelWidth = 11
	cont := strings.Repeat(" ", labelWidth-2) + "↳ "
	lines := strings.Split(screen, "\n")
	start := slices.IndexFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, label+strings.Repeat(" ", labelWidth-len(label)))
	})
	if start < 0 {
		return nil, false
	}
	parts = [][]string{{strings.TrimRight(lines[start][labelWidth:], " ")}}
	for _, l := range lines[start+1:] {
		switch {
		case strings.HasPrefix(l, strings.Repeat(" ", labelWidth)+"… more of "):
			// The first screen shows the first lines of the reason.
			return parts, true
		case strings.HasPrefix(l, cont):
			parts[len(parts)-1] = append(parts[len(parts)-1], strings.TrimRight(l[len(cont):], " "))
		case strings.HasPrefix(l, strings.Repeat(" ", labelWidth)) && strings.TrimSpace(l) != "":
			parts = append(parts, []string{strings.TrimRight(l[labelWidth:], " ")})
		case strings.HasPrefix(l, "-- lines") || strings.HasPrefix(l, "lines ") || strings.HasPrefix(l, "-----"):
			return parts, true
		default:
			return parts, false
		}
	}
	return parts, true
}

// readsAs reports whether rows, the rows of one line of a field with their
// trailing blanks removed, are value broken into pieces (or, if prefix, the
// first pieces of value): each row is the next piece of value, after the
// blanks a break may have left at the end of the row before.
func readsAs(rows []string, value string, prefix bool) bool {
	pos := 0
	for i, row := range rows {
		if i > 0 {
			// Skip the blanks the previous row ended with.
			for !strings.HasPrefix(value[pos:], row) && pos < len(value) && value[pos] == ' ' {
				pos++
			}
		}
		if !strings.HasPrefix(value[pos:], row) {
			return false
		}
		pos += len(row)
	}
	return prefix || strings.TrimRight(value[pos:], " ") == ""
}

// fieldReadsAs reports whether the field label on screen reads as value,
// line by line; when the field runs into the end of the page and partial
// is true, whether it reads as the beginning of value.
func fieldReadsAs(screen, label, value string, partial bool) bool {
	parts, cut := screenField(screen, label)
	want := strings.Split(value, "\n")
	if len(parts) == 0 || len(parts) > len(want) || len(parts) < len(want) && !(cut && partial) {
		return false
	}
	for i, rows := range parts {
		last := i == len(parts)-1
		if !readsAs(rows, want[i], last && cut && partial) {
			return false
		}
	}
	return true
}

// tmuxRows splits the output of capture-pane followed by capture-pane -J:
// the rows of the first, and the rows of the second with trailing blanks
// removed (-J keeps them). Both have the pane's height in rows unless -J
// joined rows tmux had wrapped.
func tmuxRows(both string) (rows, joined []string) {
	all := strings.Split(strings.TrimSuffix(both, "\n"), "\n")
	for i, r := range all {
		all[i] = strings.TrimRight(r, " ")
	}
	return all, all[len(all)/2:]
}
