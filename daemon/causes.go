package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/agent-sudo/agent-sudo/internal/config"
)

// shutdownExpired is the cause with which Serve ends the commands still
// running grace after a shutdown began.
type shutdownExpired struct{ grace config.Duration }

func (e shutdownExpired) Error() string {
	return fmt.Sprintf("shutdown_timeout (%s) expired", e.grace)
}

// stoppedByConsole is the cause with which a console's stop ends a
// command (broker.Stop): by names the console.
type stoppedByConsole struct{ by string }

func (e stoppedByConsole) Error() string { return "stopped by " + e.by }

// stopperOf returns the console that stopped the command run with ctx, or
// "" when none did.
func stopperOf(ctx context.Context) string {
	var stop stoppedByConsole
	if errors.As(context.Cause(ctx), &stop) {
		return stop.by
	}
	return ""
}

// ErrStoppedAtTerminal is the cause with which Run stops the daemon when
// its foreground console (agent-sudod --tty) ends: the human at the
// daemon's terminal quit it.
var ErrStoppedAtTerminal = errors.New("the console on agent-sudod's terminal (agent-sudod --tty) was quit, which stops the daemon")

// ErrTerminalHungUp is the cause with which Run stops the daemon when the
// terminal of its foreground console (agent-sudod --tty) hangs up: SIGHUP,
// or the end of the terminal's input. Nobody is left to approve, and rules
// and session grants must not go on running commands unwatched.
var ErrTerminalHungUp = errors.New("the terminal of agent-sudod --tty hung up, which stops the daemon")
