package console_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/console"
	"github.com/agent-sudo/agent-sudo/internal/consoletest"
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
	t.Parallel()
	d, tm := startConsoleE2E(t)

	for _, how := range []string{"send-keys -l", "paste-buffer"} {
		t.Run(how, func(t *testing.T) {
			marker := filepath.Join(d.Dir, "pasted-"+strings.Fields(how)[0])
			r := ask(t, d, &proto.Request{Pipeline: [][]string{{"touch", marker}}, Session: "e2e-paste"})
			tm.WaitFor("command    touch " + marker)
			consoletest.WaitPastGuard(tm)
			for _, text := range pastedProse {
				before := consoletest.Discards(tm.Screen())
				switch how {
				case "send-keys -l":
					tm.Keys("-l", text)
				default:
					tm.Run("set-buffer", "-b", "prose", text)
					tm.Run("paste-buffer", "-b", "prose", "-t", tm.Name)
				}
				// A new discard notice (the count goes up), for all of it.
				burst := fmt.Sprintf("%d keys arrived together (paste or typing ahead); press a key on its own to decide", len([]rune(text)))
				screen := tm.Wait(func(s string) bool {
					return consoletest.Discards(s) > before && strings.Contains(s, burst)
				}, fmt.Sprintf("say %q was discarded", text))
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
			consoletest.Press(t, tm, "a", "request "+r.ID+" was allowed by console")
			if resp := r.Wait(); resp.Status != proto.StatusOK {
				t.Fatalf("the lone a: status %q message %q", resp.Status, resp.Message)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Fatalf("the approved touch did not run: %v", err)
			}
		})
	}
}
