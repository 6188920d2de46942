package console

import (
	"fmt"
	"strings"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/desktopnotify"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// DesktopNotify is whether and how the console asks the terminal for a
// desktop notification when a request arrives, besides ringing the bell:
// "agent-sudo approve --desktop-notify MODE". The modes and their parser
// are package desktopnotify's, which agent-sudod uses without linking the
// console.
type DesktopNotify = desktopnotify.Mode

// The desktop notification modes (see package desktopnotify).
const (
	DesktopAuto   = desktopnotify.Auto
	DesktopOSC9   = desktopnotify.OSC9
	DesktopOSC777 = desktopnotify.OSC777
	DesktopOff    = desktopnotify.Off
)

// ParseDesktopNotify reads a mode, as the --desktop-notify flag gives it
// ([desktopnotify.Parse]).
func ParseDesktopNotify(s string) (DesktopNotify, error) { return desktopnotify.Parse(s) }

// maxDesktopText bounds the text of a desktop notification, in bytes.
const maxDesktopText = 200

// resolveDesktop turns mode into the sequence to send (DesktopOSC9,
// DesktopOSC777 or DesktopOff), for a console under the multiplexer mux
// ("" for none) with the environment getenv.
//
// Auto picks OSC 9 for iTerm2 (TERM_PROGRAM=iTerm.app) and OSC 777 for
// WezTerm and Ghostty (TERM_PROGRAM) and foot (TERM=foot*), and nothing
// elsewhere: a terminal that does not know a sequence may print it, and
// some give OSC 9 another meaning (ConEmu and Windows Terminal read
// "9;4;..." as progress). In a multiplexer auto sends nothing, since the
// outer terminal cannot be known (tmux sets TERM_PROGRAM to its own
// name); GNU screen gets nothing in any mode.
func resolveDesktop(mode DesktopNotify, mux string, getenv func(string) string) DesktopNotify {
	switch {
	case mode == DesktopOff || mux == "screen":
		return DesktopOff
	case mode == DesktopOSC9 || mode == DesktopOSC777:
		return mode
	case mux != "" || getenv == nil:
		return DesktopOff
	}
	switch getenv("TERM_PROGRAM") {
	case "iTerm.app":
		return DesktopOSC9
	case "WezTerm", "ghostty":
		return DesktopOSC777
	}
	if strings.HasPrefix(getenv("TERM"), "foot") {
		return DesktopOSC777
	}
	return DesktopOff
}

// desktopText is what a desktop notification says about s: one line of
// printable ASCII, at most maxDesktopText bytes. Everything from the
// request is escaped (termtext.EscStrict, then every non-ASCII character
// as \uNNNN), so the text holds no byte that could end or abort the
// escape sequence around it (BEL, ESC, CAN, SUB, the 8-bit ST 0x9c, which
// is also a UTF-8 continuation byte) nor a ';' that OSC 777 reads as a
// field separator in the title (the text is its last field).
func desktopText(s *approval.Shown) string {
	text := "agent-sudo: approval needed"
	if s != nil {
		if cmd, _ := termtext.CommandLine(s.Pipeline); cmd != "" {
			text += ": " + cmd
		}
		if s.Session != "" {
			text += " (session " + termtext.EscStrict(s.Session) + ")"
		}
	}
	var b strings.Builder
	for _, r := range text {
		switch {
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	out := b.String()
	if len(out) > maxDesktopText {
		out = out[:maxDesktopText-3] + "..."
	}
	return out
}

// desktopSequence returns the bytes that ask the terminal for a desktop
// notification about s in mode (resolved by resolveDesktop), or nil for
// DesktopOff. Inside tmux the sequence is wrapped for tmux's passthrough
// (ESC P tmux; ... ESC \, every ESC inside doubled), which tmux 3.3 and
// later forwards to the outer terminal only with allow-passthrough on and
// drops otherwise.
func desktopSequence(mode DesktopNotify, mux string, s *approval.Shown) []byte {
	var seq string
	switch mode {
	case DesktopOSC9:
		seq = "\x1b]9;" + desktopText(s) + "\a"
	case DesktopOSC777:
		seq = "\x1b]777;notify;agent-sudo;" + desktopText(s) + "\a"
	default:
		return nil
	}
	if mux == "tmux" {
		seq = "\x1bPtmux;" + strings.ReplaceAll(seq, "\x1b", "\x1b\x1b") + "\x1b\\"
	}
	return []byte(seq)
}
