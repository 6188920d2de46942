package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/spawn"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// ErrNotByHand is matched (errors.Is) by the error of RelayOutput and
// ServeEnrolment when they were not started as agent-sudo starts them
// (by hand): their descriptors or arguments are not what they want. The
// error's text says what was wrong.
var ErrNotByHand = errors.New("not started by agent-sudo")

type notByHand struct{ msg string }

func (e notByHand) Error() string        { return e.msg }
func (e notByHand) Is(target error) bool { return target == ErrNotByHand }

// RelayTerminalOutput, called as root just before the web approver drops
// root (ServeConfig.BeforeDrop), gives its standard output and error,
// where they are a terminal (root's, for a human), to a relay process and
// takes pipes to it in their place: the relay ("agent-sudo approve web
// relay-output UID GID", which enters RelayOutput) holds the terminal and
// writes each line it reads made visible. It is started as root and drops
// to uid and gid itself, made not dumpable first: a process started as uid
// would be dumpable from its exec until it could say otherwise, and uid's
// other processes could take the terminal from it in that window. So the
// web approver, which faces the network, keeps no descriptor of root's
// terminal, and, compromised, cannot write escape sequences there
// (docs/security.md, "The web approver"). Without a terminal on either, it
// does nothing.
func RelayTerminalOutput(uid, gid uint32) error {
	if !isTerminal(os.Stdout) && !isTerminal(os.Stderr) {
		return nil
	}
	var theirs, ours [2]*os.File
	for i := range theirs {
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("relay the output: %w", err)
		}
		theirs[i], ours[i] = r, w
	}
	defer func() {
		for i := range theirs {
			_ = theirs[i].Close()
			_ = ours[i].Close()
		}
	}()
	cmd := selfCommand(context.Background(), "approve", "web", "relay-output", strconv.FormatUint(uint64(uid), 10), strconv.FormatUint(uint64(gid), 10))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = theirs[:]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	spawn.MarkCloseOnExec() // the pipes go as 3 and 4, nothing else
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("relay the output: %w", err)
	}
	_ = cmd.Process.Release() // it ends when the pipes do
	for i, fd := range []int{1, 2} {
		if err := unix.Dup3(int(ours[i].Fd()), fd, 0); err != nil {
			return fmt.Errorf("relay the output: %w", err)
		}
	}
	return nil
}

// RelayOutput is the relay RelayTerminalOutput starts as root, with args
// the UID and GID it was given: it makes itself not dumpable, drops to UID
// and GID (DropPrivileges), then copies descriptor 3 to stdout and 4 to
// stderr, a line at a time made visible (termtext.VisibleLines), until
// both end. A copy that fails is told to warn, and the other goes on.
// Descriptors that are not pipes, or ids missing or 0, fail with
// ErrNotByHand before anything is done.
func RelayOutput(args []string, stdout, stderr io.Writer, warn func(error)) error {
	relayed := []struct {
		fd uintptr
		w  io.Writer
	}{{3, stdout}, {4, stderr}}
	for _, p := range relayed {
		var st unix.Stat_t
		if err := unix.Fstat(int(p.fd), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return notByHand{fmt.Sprintf("descriptor %d is not a pipe: started by approve --web, not by hand", p.fd)}
		}
	}
	badIDs := notByHand{"want the uid and gid to run as, neither 0, as approve --web gives them"}
	if len(args) != 2 {
		return badIDs
	}
	var ids [2]uint32
	for i, a := range args {
		n, err := strconv.ParseUint(a, 10, 32)
		if err != nil || n == 0 {
			return badIDs
		}
		ids[i] = uint32(n)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("not dumpable: %w", err)
	}
	if err := DropPrivileges(ids[0], ids[1]); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, p := range relayed {
		f := os.NewFile(p.fd, "relayed")
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer f.Close()
			// A terminal that went away (a hangup) does not stop the
			// relay: it reads on, so that the web approver, which
			// ignores the hangup, is not killed by a broken pipe.
			v := termtext.NewVisibleLines(lenient{p.w})
			_, err := io.Copy(v, f)
			_ = v.Flush()
			if err != nil && !errors.Is(err, os.ErrClosed) {
				warn(err)
			}
		}()
	}
	wg.Wait()
	return nil
}

// lenient writes to w and reports every write done, whether it was or not.
type lenient struct{ w io.Writer }

func (l lenient) Write(p []byte) (int, error) {
	_, _ = l.w.Write(p)
	return len(p), nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// selfCommand is this very program (/proc/self/exe, whatever became of
// its path: agent-sudo) run again with args, as a helper process of its
// own: in /, with nothing of the environment but a fixed PATH (and GORACE,
// so that a race-built test binary does not sleep as it exits), and with
// standard input, output and error /dev/null until the caller sets them.
func selfCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/proc/self/exe", args...)
	cmd.Args[0] = "agent-sudo"
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if v, ok := os.LookupEnv("GORACE"); ok {
		cmd.Env = append(cmd.Env, "GORACE="+v)
	}
	cmd.Dir = "/"
	return cmd
}
