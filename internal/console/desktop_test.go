package console

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

func TestResolveDesktop(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		mode   DesktopNotify
		mux    string
		getenv func(string) string
		want   DesktopNotify
	}{
		{"", "", env("TERM_PROGRAM", "iTerm.app"), DesktopOSC9},
		{DesktopAuto, "", env("TERM_PROGRAM", "WezTerm"), DesktopOSC777},
		{DesktopAuto, "", env("TERM_PROGRAM", "ghostty"), DesktopOSC777},
		{DesktopAuto, "", env("TERM", "foot-extra"), DesktopOSC777},
		{DesktopAuto, "", env("TERM", "xterm-256color"), DesktopOff},
		{DesktopAuto, "", env("TERM", "xterm-kitty"), DesktopOff},
		{DesktopAuto, "", noEnv, DesktopOff},
		{DesktopAuto, "", nil, DesktopOff},
		// In a multiplexer the outer terminal is unknown.
		{DesktopAuto, "tmux", env("TERM_PROGRAM", "iTerm.app"), DesktopOff},
		// Asked for explicitly: sent, wrapped for tmux; never in screen.
		{DesktopOSC9, "tmux", noEnv, DesktopOSC9},
		{DesktopOSC777, "", noEnv, DesktopOSC777},
		{DesktopOSC9, "screen", noEnv, DesktopOff},
		{DesktopOff, "", env("TERM_PROGRAM", "iTerm.app"), DesktopOff},
	}
	for _, tt := range tests {
		if got := resolveDesktop(tt.mode, tt.mux, tt.getenv); got != tt.want {
			t.Errorf("resolveDesktop(%q, %q) = %q, want %q", tt.mode, tt.mux, got, tt.want)
		}
	}
	for _, s := range []string{"auto", "osc9", "osc777", "off"} {
		if m, err := ParseDesktopNotify(s); err != nil || string(m) != s {
			t.Errorf("ParseDesktopNotify(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseDesktopNotify("on\x1b"); err == nil || err.Error() != `"on\x1b" is not a desktop notification mode; want auto, osc9, osc777 or off` {
		t.Errorf("ParseDesktopNotify(on ESC): %v", err)
	}
}

// hostileShown is a request whose text tries to end the OSC early and
// write to the terminal: BEL and ST end an OSC, CAN and SUB abort it, 0x9c
// is the 8-bit ST (and a UTF-8 continuation byte: U+011C is C4 9C), ';'
// separates OSC 777's fields.
func hostileShown() *approval.Shown {
	s := shown("hostile")
	s.Session = "s\a\x1b\\\x18\x1a\u009c\u011c;x"
	s.Pipeline = [][]string{{"echo", "\a\x1b]0;pwned\a\x1b\\", strings.Repeat("\u011c\x1b", 300)}}
	return s
}

// payload checks that seq is an OSC of the form prefix, text, BEL, and
// that the text is printable ASCII, and returns the text.
func payload(t *testing.T, seq, prefix string) string {
	t.Helper()
	if !strings.HasPrefix(seq, prefix) || !strings.HasSuffix(seq, "\a") {
		t.Fatalf("sequence %q does not have the form %q text BEL", seq, prefix)
	}
	text := seq[len(prefix) : len(seq)-1]
	for i := 0; i < len(text); i++ {
		if text[i] < 0x20 || text[i] > 0x7e {
			t.Errorf("the text of %q holds byte %#x at %d: it could end or abort the sequence", seq, text[i], i)
		}
	}
	if len(text) > maxDesktopText {
		t.Errorf("the text is %d bytes, more than %d", len(text), maxDesktopText)
	}
	return text
}

func TestDesktopSequenceHostile(t *testing.T) {
	s := hostileShown()
	osc9 := string(desktopSequence(DesktopOSC9, "", s))
	text := payload(t, osc9, "\x1b]9;")
	if want := `agent-sudo: approval needed: echo $'\x07\x1b]0`; !strings.HasPrefix(text, want) || !strings.HasSuffix(text, "...") {
		t.Errorf("OSC 9 text %q, want it to start %q, escaped, and be cut with ...", text, want)
	}
	osc777 := string(desktopSequence(DesktopOSC777, "", s))
	text777 := payload(t, osc777, "\x1b]777;notify;agent-sudo;")
	if text777 != text {
		t.Errorf("OSC 777 text %q differs from OSC 9's %q", text777, text)
	}
	// The session alone, short enough to be whole.
	s.Pipeline = [][]string{{"id"}}
	text = payload(t, string(desktopSequence(DesktopOSC9, "", s)), "\x1b]9;")
	if want := `agent-sudo: approval needed: id (session s\x07\x1b\\\x18\x1a\u009c\u011c;x)`; text != want {
		t.Errorf("text %q, want %q", text, want)
	}
	// Inside tmux: passthrough, with every ESC of the sequence doubled, so
	// the only single ESC is the one that ends the passthrough.
	inner := string(desktopSequence(DesktopOSC9, "", s))
	wrapped := string(desktopSequence(DesktopOSC9, "tmux", s))
	if want := "\x1bPtmux;" + strings.ReplaceAll(inner, "\x1b", "\x1b\x1b") + "\x1b\\"; wrapped != want {
		t.Errorf("in tmux: %q, want %q", wrapped, want)
	}
	if desktopSequence(DesktopOff, "", s) != nil {
		t.Errorf("DesktopOff sends something")
	}
}

// TestRunEmitsDesktopNotification: with a desktop mode, the console writes
// the bell and then the OSC for each request that arrives; in auto mode on
// an unknown terminal it writes the bell alone.
func TestRunEmitsDesktopNotification(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"osc9", Options{Desktop: DesktopOSC9, Getenv: noEnv}, "\a\x1b]9;agent-sudo: approval needed: "},
		{"auto on iTerm2", Options{Getenv: func(k string) string {
			if k == "TERM_PROGRAM" {
				return "iTerm.app"
			}
			return ""
		}}, "\a\x1b]9;agent-sudo: approval needed: "},
		{"auto on an unknown terminal", Options{Getenv: noEnv}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, dc := net.Pipe()
			scr := &screen{}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			opts := tc.opts
			opts.Guard, opts.Proc = 50*time.Millisecond, fstest.MapFS{}
			go func() { done <- Run(ctx, cc, nil, scr, opts) }()
			t.Cleanup(func() { cancel(); dc.Close(); <-done })
			d := newFakeDaemon(t, dc)
			d.send(approval.Message{Type: approval.MsgHello, Version: "1.2.3"})
			d.send(approval.Message{Type: approval.MsgGrants})
			s := hostileShown()
			d.send(approval.Message{Type: approval.MsgPending, ID: s.ID, Hash: s.Hash(), Request: s})
			scr.waitFor(t, "REQUEST WAITING FOR YOUR DECISION")
			out := scr.String()
			if tc.want == "" {
				if !strings.Contains(out, "\a") || strings.Contains(out, "\x1b]9;") || strings.Contains(out, "\x1b]777;") {
					t.Errorf("want the bell and no desktop notification; the screen has %q", out)
				}
				return
			}
			want := "\a" + string(desktopSequence(DesktopOSC9, "", s))
			if !strings.HasPrefix(want, tc.want) || !bytes.Contains([]byte(out), []byte(want)) {
				t.Errorf("the screen lacks the bell and OSC %q; it has %q", want, out)
			}
		})
	}
}
