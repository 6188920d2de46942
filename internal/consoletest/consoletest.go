// Package consoletest presses keys on the approval console (agent-sudo
// approve, agent-sudod --tty) running in a tmuxtest session, the way its
// keyboard guard asks a human to: after the prompt's key guard has ended,
// and after a quiet keyboard. It is for tests only; no production code
// imports it.
//
// A key pressed that way can still be discarded when the machine is
// loaded: the console judges a key alone by when its event loop gets to it,
// and by the terminal's reads (internal/console's keyguard.go), and a busy
// machine can delay the loop past the quiet window. The console then fails
// closed: the key decides nothing, and the screen says so. Press does what
// a human would, and presses again; what the key does, when it counts, is
// unchanged, so a test that uses it proves the same thing.
package consoletest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/console"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
)

// guardHint is on the screen while a prompt's key guard runs.
const guardHint = "keys enabled in"

// attempts is how many times Press presses a key the console discards.
const attempts = 5

// WaitPastGuard waits until the prompt's key guard has ended: the screen
// no longer counts down to the keys being enabled. It returns that screen.
func WaitPastGuard(tm *tmuxtest.Session) string {
	return tm.WaitGone(guardHint)
}

// PressAlone presses key (a tmux key name) as a human would: after the
// keyboard has been quiet for twice the console's quiet window. It does
// not wait for the key guard, nor check that the key counted.
func PressAlone(tm *tmuxtest.Session, key string) {
	time.Sleep(2 * console.QuietWindow) // the quiet the key needs before it
	tm.Keys(key)
}

// Press presses key alone once the key guard has ended, and waits until
// the screen shows want, which the key must bring about (it must not be on
// the screen before). If the console discards the key instead (its discard
// notice appears, or its count rises), Press presses again, at most five
// times in all, then fails the test. It returns the screen that shows want.
//
// Only a discard makes Press press again; a key that merely takes long to
// act is waited for (up to the session's timeout), so that a key is never
// pressed twice when once counted. A notice that goes away (it expired, or
// the key closed the screen that showed it) is not a discard.
func Press(t testing.TB, tm *tmuxtest.Session, key, want string) string {
	t.Helper()
	for range attempts {
		screen := WaitPastGuard(tm)
		if strings.Contains(screen, want) {
			t.Fatalf("Press(%s): the screen shows %q before the key is pressed, so it cannot tell that the key counted:\n%s", key, want, screen)
		}
		seen := Discards(screen)
		PressAlone(tm, key)
		discarded := false
		screen = tm.Wait(func(s string) bool {
			if strings.Contains(s, want) {
				return true
			}
			// Each screen against the one captured before it: a
			// notice that went away and came back is a discard.
			n := Discards(s)
			discarded = n > seen
			seen = n
			return discarded
		}, "show "+strconv.Quote(want)+", or say that "+key+" was discarded")
		if !discarded {
			return screen
		}
		t.Logf("the console discarded %s (a loaded machine delayed it); pressing it again. The screen:\n%s", key, screen)
	}
	t.Fatalf("the console discarded %s %d times", key, attempts)
	return ""
}

// discardNotice matches the console's notice of discarded input, with its
// count from the second discard on: "input discarded (2×): ".
var discardNotice = regexp.MustCompile(`input discarded(?: \((\d+)×\))?: `)

// Discards returns how many discarded bursts of input the screen's discard
// notice counts: 0 when none is shown, 1 for "input discarded: ", N for
// "input discarded (N×): ".
func Discards(screen string) int {
	m := discardNotice.FindStringSubmatch(screen)
	switch {
	case m == nil:
		return 0
	case m[1] == "":
		return 1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
