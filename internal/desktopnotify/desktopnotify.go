// Package desktopnotify names the modes of --desktop-notify (agent-sudo
// approve's and agent-sudod --tty's) and parses them. It is apart from
// package console, which sends the notifications, so that agent-sudod can
// refuse a bad value at start without linking the console: the daemon
// passes the mode on to the console it starts (agent-sudo approve).
package desktopnotify

import "fmt"

// Mode is whether and how a console asks the terminal for a desktop
// notification when a request arrives, besides ringing the bell.
type Mode string

// The modes.
const (
	// Auto (also the zero value) sends the escape sequence the terminal
	// is known to support, from TERM_PROGRAM and TERM, and none when the
	// terminal is unknown or the console runs in a multiplexer.
	Auto Mode = "auto"
	// OSC9 sends OSC 9 (iTerm2's): ESC ] 9 ; text BEL.
	OSC9 Mode = "osc9"
	// OSC777 sends OSC 777 (rxvt-unicode's, also foot's, WezTerm's and
	// Ghostty's): ESC ] 777 ; notify ; agent-sudo ; text BEL.
	OSC777 Mode = "osc777"
	// Off sends nothing but the bell.
	Off Mode = "off"
)

// Parse reads a mode, as the --desktop-notify flag gives it; any other
// value is an error that names it and lists the modes.
func Parse(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, OSC9, OSC777, Off:
		return m, nil
	}
	return "", fmt.Errorf("%q is not a desktop notification mode; want auto, osc9, osc777 or off", s)
}
