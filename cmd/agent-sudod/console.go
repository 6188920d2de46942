package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agent-sudo/agent-sudo/daemon"
	"github.com/agent-sudo/agent-sudo/internal/desktopnotify"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/spawn"
)

// The console of agent-sudod --tty is "agent-sudo approve", started by the
// daemon as a child on its terminal, so that agent-sudod does not link the
// console (docs/development.md, "Does the console belong in the daemon's
// process?"). It is the agent-sudo beside agent-sudod's own executable,
// never one found in PATH.

// consoleName is the console's program, looked for beside agent-sudod.
const consoleName = "agent-sudo"

// consoleHungUp is the exit status of "agent-sudo approve --stops-daemon"
// when its terminal hung up (its input ended, or reading it failed with
// EIO): 128 + SIGHUP, as a shell reports a program the hang-up killed.
// cmd/agent-sudo/cli's exitHungUp is the same number.
const consoleHungUp = 128 + int(syscall.SIGHUP)

// consoleProgram returns the path of the console program beside exe,
// agent-sudod's executable (os.Executable), once spawn.CheckProgram has
// found it safe to run as root; otherwise an error that says what is
// missing or wrong and what to do.
func consoleProgram(exe string) (string, error) {
	prog := filepath.Join(filepath.Dir(exe), consoleName)
	if err := spawn.CheckProgram(prog, "console program"); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", hint.Wrap(fmt.Errorf("--tty runs its console %q, which must be beside agent-sudod, and there is none", prog),
				"install or build both binaries together (make build puts both in bin/), "+
					"or start agent-sudod without --tty and approve from another terminal with 'sudo agent-sudo approve'")
		}
		return "", fmt.Errorf("--tty: refusing to run its console: %w", err)
	}
	return prog, nil
}

// consoleArgs is the console's command line: "agent-sudo approve" for the
// approver socket sock, saying that quitting it stops the daemon.
func consoleArgs(sock string, desktop desktopnotify.Mode) []string {
	return []string{consoleName, "approve", "--stops-daemon", "--approver-socket", sock, "--desktop-notify", string(desktop)}
}

// consoleEnvNames are the variables of the daemon's environment the
// console gets, and the only ones: what it reads of the terminal. TERM,
// COLORTERM, COLORFGBG, NO_COLOR, CLICOLOR and CLICOLOR_FORCE choose its
// colours (termenv); TERM_PROGRAM, TERM, TMUX and STY the desktop
// notification and the multiplexer warning (console.Options.Getenv); LANG,
// LC_ALL, LC_CTYPE and RUNEWIDTH_EASTASIAN the width of ambiguous
// characters (go-runewidth).
var consoleEnvNames = append([]string{
	"TERM", "COLORTERM", "COLORFGBG", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
	"TERM_PROGRAM", "TMUX", "STY",
	"LANG", "LC_ALL", "LC_CTYPE", "RUNEWIDTH_EASTASIAN",
}, raceEnvNames...)

// consoleEnv is the console's environment: the variables of
// consoleEnvNames that getenv has, nothing else.
func consoleEnv(getenv func(string) string) []string {
	var env []string
	for _, name := range consoleEnvNames {
		if v := getenv(name); v != "" {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// runConsole runs the console program prog on the daemon's terminal
// (descriptors 0, 1 and 2) for the approver socket sock, until it ends or
// ctx does (then it is stopped: spawn.RunOnTerminal). It is the daemon's
// Foreground function: it returns nil when the human quit the console, an
// error wrapping daemon.ErrTerminalHungUp when its terminal hung up, and
// another error otherwise.
func runConsole(ctx context.Context, prog, sock string, desktop desktopnotify.Mode, getenv func(string) string) error {
	end, err := spawn.RunOnTerminal(ctx, spawn.TerminalCmd{
		Path: prog, Args: consoleArgs(sock, desktop), Env: consoleEnv(getenv),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	})
	if err != nil {
		return fmt.Errorf("the console (%s approve): %w", prog, err)
	}
	return consoleResult(ctx, end)
}

// consoleResult is what the console's end means to the daemon: nil when it
// exited 0 (the human quit); an error wrapping daemon.ErrTerminalHungUp
// when it exited consoleHungUp or was killed by SIGHUP; ctx's error when
// ctx ended first (the daemon stopped it); else an error with its status.
func consoleResult(ctx context.Context, end spawn.End) error {
	switch {
	case end.Signal == 0 && end.Code == 0:
		return nil
	case end.Signal == syscall.SIGHUP || end.Signal == 0 && end.Code == consoleHungUp:
		return fmt.Errorf("%w: the console (agent-sudo approve) ended with %v", daemon.ErrTerminalHungUp, end)
	case ctx.Err() != nil:
		return fmt.Errorf("the console (agent-sudo approve) was stopped with the daemon (%v): %w", end, ctx.Err())
	}
	return fmt.Errorf("the console (agent-sudo approve) ended with %v", end)
}
