package console

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// stdinShown is a request that feeds data to tee.
func stdinShown(id string, data []byte) *approval.Shown {
	s := shown(id)
	s.Pipeline, s.Programs = [][]string{{"tee", "/etc/x"}}, []approval.Program{{Chain: []string{"/usr/bin/tee"}}}
	s.Stdin = approval.NewStdinShown(data)
	return s
}

// TestStdinFullView: i opens the whole stdin, scrollable to its last
// bytes; decision keys do nothing there; Esc and i go back to the request
// with Deny still preselected.
func TestStdinFullView(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "line %04d of the new config\n", i)
	}
	b.WriteString("THE LAST LINE")
	data := []byte(b.String())
	for _, back := range []string{"esc", "i"} {
		t.Run("back with "+back, func(t *testing.T) {
			h := newHarness(t, "")
			s := stdinShown("r1", data)
			h.pending(s)
			h.pastGuard()
			h.wantView(fmt.Sprintf("press i to see all %d bytes", len(data)), "i stdin")
			h.notView("THE LAST LINE", "line 0399")
			h.press("i")
			h.wantView("STDIN OF REQUEST r1", fmt.Sprintf("%d bytes · text", len(data)), "sha256 "+s.Stdin.SHA256,
				"  1  line 0000 of the new config", "esc/i back to the request")
			h.notView("Your decision")
			h.press("end")
			h.wantView("401  THE LAST LINE", "line 0399 of the new config",
				fmt.Sprintf("-- end of stdin: %d bytes, 401 lines, no newline at the end --", len(data)))
			h.press("pgup")
			h.notView("THE LAST LINE")
			h.press("home")
			h.wantView("line 0000")
			h.press("down")
			h.notView("  1  line 0000")
			h.wantView("  2  line 0001")

			// Nothing decides here, however it is pressed.
			for _, k := range []string{"a", "s", "d", "enter", "up", "up", "enter", "x", "r", "g"} {
				h.press(k)
			}
			if got := h.takeSent(); len(got) != 0 {
				t.Fatalf("keys in the stdin view sent %+v", got)
			}
			h.wantView("STDIN OF REQUEST r1")

			h.press(back)
			h.wantView("Your decision", "> Deny")
			h.notView("STDIN OF REQUEST")
			// The prompt's guard is armed again, then Enter denies.
			h.pastGuard()
			h.press("enter")
			h.press("enter")
			if got := h.takeSent(); len(got) != 1 || !reflect.DeepEqual(got[0], decideMsg(s, approval.DenyOnce, "")) {
				t.Fatalf("sent %+v, want a denial", got)
			}
		})
	}
}

// TestStdinFullViewEscapes: hostile text is shown escaped in the full
// view, binary as a hexdump of all of it.
func TestStdinFullViewEscapes(t *testing.T) {
	h := newHarness(t, "")
	hostile := "ok\n\x1b]0;pwned\x07\x1b[2J\u202eevil\u202c 全角\u200b\r\ntail"
	h.pending(stdinShown("r1", []byte(hostile)))
	h.pastGuard()
	h.press("i")
	h.wantView(`\x1b]0;pwned\x07\x1b[2J\u202eevil\u202c`, `\u200b\r`, "3  tail", "1  ok")

	// The daemon's sha256 is shown escaped too.
	h = newHarness(t, "")
	s := stdinShown("r3", []byte("in"))
	s.Stdin.SHA256 = "x\x1b[2Jy"
	h.pending(s)
	h.pastGuard()
	h.press("i")
	h.wantView(`sha256 x\x1b[2Jy · nothing is decided`)

	h = newHarness(t, "")
	bin := append([]byte{0, 0xff, 0x1b, '['}, bytes.Repeat([]byte("A"), 3000)...)
	bin = append(bin, 0xde, 0xad)
	h.pending(stdinShown("r2", bin))
	h.pastGuard()
	h.wantView("press i to see all 3006 bytes")
	h.press("i")
	h.wantView("binary, as a hexdump", "00000000  00 ff 1b 5b 41 41", "|...[AAAAAAAAAAAA|")
	h.press("end")
	h.wantView("00000bb0  41 41 41 41 41 41 41 41 41 41 41 41 de ad", "|AAAAAAAAAAAA..|", "-- end of stdin: 3006 bytes --")
}

// TestStdinKeyNeedsStdin: without stdin, i does nothing and is not offered.
func TestStdinKeyNeedsStdin(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	h.pastGuard()
	h.notView("i stdin")
	h.press("i")
	if h.m.mode() != modeDecide {
		t.Fatalf("mode = %v after i without stdin", h.m.mode())
	}
	h.wantView("Your decision")
	h.notView("STDIN OF REQUEST")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("sent %+v", got)
	}
}

// TestStdinViewLeavesWithItsRequest: when the request on screen goes, the
// stdin view goes with it.
func TestStdinViewLeavesWithItsRequest(t *testing.T) {
	h := newHarness(t, "")
	h.pending(stdinShown("r1", []byte("one\n")))
	h.pending(shown("r2"))
	h.pastGuard()
	h.press("i")
	h.wantView("STDIN OF REQUEST r1")
	h.resolved("r1", approval.Timeout, "")
	h.notView("STDIN OF REQUEST")
	h.wantView("Your decision", "> Deny")
}
