package console_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/console"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// pastedProse is ordinary text with each key that acts at the prompt (a, s,
// d, Enter, q, g) as a word of its own, as it might be pasted or typed into
// the wrong window.
var pastedProse = []string{
	"hello a",
	"so I did s quick check",
	"this is a test",
	"I'd say d is fine",
	"then q to quit",
	"see g for grants",
	"a s d",
	"ok\n",
	"line one\nand a second line\n",
}

// TestE2EPastedTextNeverDecides types and pastes prose into the real
// console ("agent-sudo approve" in tmux, against the real daemon): with
// "tmux send-keys -l" (the terminal delivers the text as typed, in one
// write) and with a non-bracketed "tmux paste-buffer" (no -p). None of it
// may decide, open the note, open the grants or quit; the screen says the
// input was discarded; the request is still waiting for the agent; and a
// key pressed on its own afterwards does decide it.
func TestE2EPastedTextNeverDecides(t *testing.T) {
	d, tm := startConsoleE2E(t)

	for _, how := range []string{"send-keys -l", "paste-buffer"} {
		t.Run(how, func(t *testing.T) {
			marker := filepath.Join(d.Dir, "pasted-"+strings.Fields(how)[0])
			r := ask(t, d, &proto.Request{Pipeline: [][]string{{"touch", marker}}, Session: "e2e-paste"})
			tm.WaitFor("command    touch " + marker)
			waitPastGuard(tm)
			for _, text := range pastedProse {
				switch how {
				case "send-keys -l":
					tm.Keys("-l", text)
				default:
					tm.Run("set-buffer", "-b", "prose", text)
					tm.Run("paste-buffer", "-b", "prose", "-t", tm.Name)
				}
				n := len([]rune(text))
				screen := tm.WaitFor(fmt.Sprintf("input discarded: %d keys arrived together (paste or typing ahead); press a key on its own to decide", n))
				for _, bad := range []string{"Note for the agent", "SESSION GRANTS", "was sent", "exited with status"} {
					if strings.Contains(screen, bad) {
						t.Fatalf("after %s of %q the screen shows %q:\n%s", how, text, bad, screen)
					}
				}
				// Past the quiet window: nothing held may act later.
				time.Sleep(2 * console.QuietWindow)
				select {
				case resp := <-r.Done:
					t.Fatalf("%s of %q decided the request: %+v", how, text, resp)
				default:
				}
			}
			screen := tm.Screen()
			for _, want := range []string{"command    touch " + marker, "> Deny"} {
				if !strings.Contains(screen, want) {
					t.Fatalf("after the pastes the screen lacks %q:\n%s", want, screen)
				}
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatalf("the command ran: stat %s: %v", marker, err)
			}
			// The request is still waiting: a key pressed on its own decides
			// it now, and the agent gets its answer.
			pressAlone(tm, "a")
			if resp := r.Wait(); resp.Status != proto.StatusOK {
				t.Fatalf("the lone a: status %q message %q", resp.Status, resp.Message)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Fatalf("the approved touch did not run: %v", err)
			}
			tm.WaitFor("request " + r.ID + " was allowed by console")
		})
	}
}

// pressAlone presses one key (a tmux key name) as a human would: after the
// keyboard has been quiet for longer than the console's quiet window.
func pressAlone(tm *tmuxtest.Session, key string) {
	time.Sleep(2 * console.QuietWindow)
	tm.Keys(key)
}

// pressAloneUntil presses key on its own until the screen shows want: if
// the console discards the key instead (its event loop got to it more than
// the quiet window after reading it, which a loaded machine can cause:
// keyguard.go, readLog.alone), it presses again, as a human would, at most
// three times. A discarded key decides nothing, so what the test proves is
// unchanged. A discard notice already on screen is not taken for a new one.
func pressAloneUntil(t *testing.T, tm *tmuxtest.Session, key, want string) {
	t.Helper()
	for range 3 {
		before := strings.Count(tm.Screen(), discardedNotice)
		pressAlone(tm, key)
		screen := tm.Wait(func(s string) bool {
			return strings.Contains(s, want) || strings.Count(s, discardedNotice) > before
		}, fmt.Sprintf("%q, or the key %s discarded", want, key))
		if strings.Contains(screen, want) {
			return
		}
	}
	t.Fatalf("the console discarded %s three times", key)
}

// discardedNotice starts the notice of a discarded key.
const discardedNotice = "input discarded"

// waitPastGuard waits until the prompt's key guard has ended: the screen
// no longer counts down to the keys being enabled.
func waitPastGuard(tm *tmuxtest.Session) {
	tm.WaitGone("keys enabled in")
}
