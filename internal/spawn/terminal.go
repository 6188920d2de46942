package spawn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/fsperm"
)

// TerminalCmd is the one other kind of child the daemon starts: a program
// that works on the daemon's own terminal for the human at it, as the
// daemon's user. Today it is the console of agent-sudod --tty ("agent-sudo
// approve", which the daemon linked in before). Unlike [Cmd], it needs the
// terminal, so [RunOnTerminal]'s policy is another:
//
//   - its program is a regular file that only root (or the daemon's user)
//     can change, in a directory that only they can change either
//     ([CheckProgram]), checked again right before it starts;
//   - it has exactly descriptors 0, 1 and 2, the files given (the daemon's
//     terminal); every other descriptor of the daemon is marked
//     close-on-exec first ([MarkCloseOnExec]);
//   - it stays in the daemon's session and process group, so that the
//     terminal stays its controlling terminal and it is in the terminal's
//     foreground process group (it reads keys and gets SIGWINCH);
//   - it runs as the daemon's user, in "/", with exactly the environment
//     its caller built, from nothing (not the daemon's);
//   - when ctx ends it is sent SIGTERM, and SIGKILL StopGrace later if it
//     has not exited; when the daemon dies it gets SIGTERM (the parent
//     death signal);
//   - a child that ends by a signal may have left the terminal raw and on
//     its alternate screen: the terminal's modes are set back to what they
//     were before it started, and the alternate screen left.
type TerminalCmd struct {
	// Path is the program's absolute path.
	Path string
	// Args is its argument vector, Args[0] included.
	Args []string
	// Env is its environment, built by the caller from nothing.
	Env []string
	// Stdin, Stdout and Stderr are its descriptors 0, 1 and 2: the
	// daemon's terminal. All three are required.
	Stdin, Stdout, Stderr *os.File
	// StopGrace is how long it has to exit after the SIGTERM sent when
	// ctx ends, before it is killed; zero means DefaultStopGrace.
	StopGrace time.Duration
}

// DefaultStopGrace is TerminalCmd.StopGrace's default.
const DefaultStopGrace = 5 * time.Second

// End is how a child of [RunOnTerminal] ended.
type End struct {
	// Code is its exit status when it exited, else -1.
	Code int
	// Signal is the signal that killed it, else 0.
	Signal syscall.Signal
}

// String says how it ended: "exit status N" or "killed by signal NAME".
func (e End) String() string {
	if e.Signal != 0 {
		return fmt.Sprintf("killed by signal %s", unix.SignalName(e.Signal))
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// leaveScreen is what a terminal child killed by a signal may have left
// on: the alternate screen, bracketed paste, a hidden cursor. It is written
// after such a child; a terminal that was in none of them ignores it.
const leaveScreen = "\x1b[?2004l\x1b[?25h\x1b[?1049l"

// RunOnTerminal starts c under the terminal policy ([TerminalCmd]), waits
// for it to end and says how it ended. The error is non-nil only when c is
// refused (a relative path, no arguments, a missing file: the program
// check's error), or the child could not be started or waited for; a child
// that exits with a status or is killed is an End and no error. When ctx
// ends first, the child is stopped as TerminalCmd says and its End is
// still returned: the caller tells ctx's end apart by ctx.Err().
func RunOnTerminal(ctx context.Context, c TerminalCmd) (End, error) {
	cmd, err := terminalCommand(ctx, c)
	if err != nil {
		return End{}, err
	}
	if err := CheckProgram(c.Path, "program"); err != nil {
		return End{}, err
	}
	// Read before the child changes them; a descriptor that is not a
	// terminal (a test's) has none to restore.
	modes, modesErr := unix.IoctlGetTermios(int(c.Stdin.Fd()), unix.TCGETS)
	MarkCloseOnExec()
	if err := cmd.Start(); err != nil {
		return End{}, fmt.Errorf("spawn: start %s: %w", c.Path, err)
	}
	waitErr := cmd.Wait()
	ps := cmd.ProcessState
	if ps == nil {
		return End{}, fmt.Errorf("spawn: wait for %s: %w", c.Path, waitErr)
	}
	end := End{Code: ps.ExitCode()}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		end.Signal = ws.Signal()
	}
	if end.Signal != 0 && modesErr == nil {
		// Errors are left: a terminal that hung up takes neither.
		_ = unix.IoctlSetTermios(int(c.Stdin.Fd()), unix.TCSETS, modes)
		_, _ = c.Stdout.WriteString(leaveScreen)
	}
	return end, nil
}

// terminalCommand builds the exec.Cmd of c, or says why the policy refuses
// it (not the program check, which needs the file system).
func terminalCommand(ctx context.Context, c TerminalCmd) (*exec.Cmd, error) {
	switch {
	case !filepath.IsAbs(c.Path):
		return nil, fmt.Errorf("spawn: program %q is not an absolute path", c.Path)
	case len(c.Args) == 0:
		return nil, fmt.Errorf("spawn: %s: no argument vector (argv[0] is missing)", c.Path)
	case c.Stdin == nil || c.Stdout == nil || c.Stderr == nil:
		return nil, fmt.Errorf("spawn: %s: a terminal program needs stdin, stdout and stderr", c.Path)
	}
	cmd := exec.CommandContext(ctx, c.Path)
	cmd.Args = slices.Clone(c.Args)
	// Non-nil: a nil Env would inherit the daemon's.
	cmd.Env = append([]string{}, c.Env...)
	cmd.Dir = "/"
	// *os.File: passed as they are, as descriptors 0, 1 and 2.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	// No Setsid, no Setpgid, no Credential: the daemon's session, process
	// group and user.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	// The process alone: its process group is the daemon's.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = c.StopGrace
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = DefaultStopGrace
	}
	return cmd, nil
}

// CheckProgram returns nil when path, an absolute path, is a regular
// executable file that only root or the daemon's user can change, in a
// directory that only they can change (so that nobody else can replace it
// between this check and its start), and otherwise an error naming it as
// "the what PATH" (what such as "console program") and saying what is
// wrong, wrapping fs.ErrNotExist when the file or its directory is
// missing. A symbolic link is refused: the daemon runs the file it checked.
func CheckProgram(path, what string) error {
	const why = "the daemon runs it as its own user, on its terminal"
	name := fmt.Sprintf("the %s %s", what, path)
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%s: not an absolute path", name)
	}
	dir := filepath.Dir(path)
	dfi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := fsperm.Dir(fmt.Sprintf("the directory %s of the %s", dir, what), dfi, "whoever can write it can replace the program, which "+why); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// Wrapped: a caller tells a missing program apart.
			return fmt.Errorf("%s does not exist: %w", name, os.ErrNotExist)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return fsperm.Program(name, fi, "whoever can write it can run what they like as the daemon's user: "+why)
}
