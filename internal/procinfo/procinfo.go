package procinfo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/internal/sysfile"
)

// Bounds on what is read and kept.
const (
	// MaxDepth bounds the hops of an ancestry, the peer included.
	MaxDepth = 8
	// MaxArgs bounds the argv elements kept per hop, MaxArg the bytes of
	// each (cut at a UTF-8 boundary where possible) and MaxRead the bytes
	// read from any one /proc file.
	MaxArgs = 4
	MaxArg  = 128
	MaxRead = 4096
	// WalkTimeout bounds a whole ancestry walk (see the package doc).
	WalkTimeout = 2 * time.Second
)

// Why an ancestry walk stopped (Ancestry.End).
const (
	EndSessionLeader = "session leader"
	EndLoginShell    = "login shell"
	EndInit          = "init"
	EndDepth         = "depth limit"
	EndExited        = "exited during the walk"
	EndTimeout       = "timed out"
	EndBusy          = "not read: too many ancestry walks under way"
)

// Proc reads /proc. Dir is the proc file system's mount point; the zero
// value reads "/proc". Own, when set, holds the reader's own namespaces as
// [Proc.OwnNamespaces] returned them, which [Proc.Container] compares with
// the peer's instead of reading /proc/self each time (a process's own
// namespaces change only when it calls setns or unshare itself).
type Proc struct {
	Dir string
	Own map[string]uint64
}

// OwnNamespaces reads the inode number of each of the reader's own
// namespaces (by kind, as in Namespaces); a kind that cannot be read is
// left out, and is then never reported as foreign by Container.
func (p Proc) OwnNamespaces() map[string]uint64 {
	own := make(map[string]uint64, len(Namespaces))
	for _, kind := range Namespaces {
		if n, err := p.nsInode(self, kind); err == nil {
			own[kind] = n
		}
	}
	return own
}

func (p Proc) path(pid int32, name string) string {
	dir := p.Dir
	if dir == "" {
		dir = "/proc"
	}
	if pid < 0 {
		return filepath.Join(dir, "self", name)
	}
	return filepath.Join(dir, strconv.FormatInt(int64(pid), 10), name)
}

// self is the pid argument that reads /proc/self.
const self = -1

// Hop is one process of an ancestry.
type Hop struct {
	// PID is the process id in the daemon's pid namespace.
	PID int32 `json:"pid"`
	// Exe is the target of /proc/PID/exe, kept by the kernel, or
	// "(unknown: why)" when it could not be read.
	Exe string `json:"exe"`
	// Comm is the process's name (/proc/PID/stat), at most 15 bytes; the
	// process can set it.
	Comm string `json:"comm"`
	// Argv is the first MaxArgs elements of its argument vector, each at
	// most MaxArg bytes; the process can rewrite it. ArgvCut is set when
	// anything was left out.
	Argv    []string `json:"argv,omitempty"`
	ArgvCut bool     `json:"argv_cut,omitempty"`
}

// Ancestry is a process and its parents, the process first.
type Ancestry struct {
	Hops []Hop `json:"hops"`
	// End says why the walk stopped after the last hop: one of the End
	// constants, or "unreadable: " and why.
	End string `json:"end"`
	// Changed is set when the process that connected is not, or no
	// longer, the first hop's: it exec'd another program or exited between
	// connecting and the walk, or could not be pinned when it connected
	// ([Pin.Check] says which, starting with a Changed constant). The hops
	// are then what /proc held later, not who asked; nothing shows them as
	// verified. Absent in records written before it existed.
	Changed string `json:"requester_changed,omitempty"`
}

// stat is what Ancestry needs from /proc/PID/stat.
type stat struct {
	comm          string
	ppid, session int32
	ok            bool
}

// parseStat parses /proc/PID/stat: "pid (comm) state ppid pgrp session
// ...". comm may hold any byte, ")" and spaces included, so the fields are
// read after the last ")".
func parseStat(b []byte) (stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return stat{}, errors.New("malformed stat: no (comm)")
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 4 {
		return stat{}, fmt.Errorf("malformed stat: %d fields after comm, want at least 4", len(f))
	}
	ppid, err := strconv.ParseInt(f[1], 10, 32)
	if err != nil {
		return stat{}, fmt.Errorf("malformed stat: ppid: %w", err)
	}
	sid, err := strconv.ParseInt(f[3], 10, 32)
	if err != nil {
		return stat{}, fmt.Errorf("malformed stat: session: %w", err)
	}
	return stat{comm: string(b[open+1 : end]), ppid: int32(ppid), session: int32(sid), ok: true}, nil
}

// parseArgv splits /proc/PID/cmdline (NUL-terminated elements, possibly
// cut at MaxRead) into at most MaxArgs elements of at most MaxArg bytes.
// full says whether b is the whole file.
func parseArgv(b []byte, full bool) (argv []string, cut bool) {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil, !full
	}
	parts := bytes.Split(b, []byte{0})
	if len(parts) > MaxArgs {
		parts, cut = parts[:MaxArgs], true
	}
	for _, p := range parts {
		if len(p) > MaxArg {
			n := MaxArg
			for n > MaxArg-utf8.UTFMax && !utf8.RuneStart(p[n]) {
				n--
			}
			p, cut = p[:n], true
		}
		argv = append(argv, string(p))
	}
	return argv, cut || !full
}

// readBounded reads at most MaxRead bytes of name and reports whether that
// was the whole file (package sysfile says why with plain system calls).
func readBounded(name string) ([]byte, bool, error) {
	return sysfile.Read(name, MaxRead)
}

// gone reports whether err means the process no longer exists.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// why is err's bare cause, for a marker: the path is the pid, not news.
func why(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err.Error()
}

// Exe returns the target of /proc/PID/exe, or "(unknown: why)".
func (p Proc) Exe(pid int32) string {
	t, err := os.Readlink(p.path(pid, "exe"))
	if err != nil {
		return "(unknown: " + why(err) + ")"
	}
	return t
}

// Ancestry walks from pid up through its parents until a session leader,
// a login shell (argv[0] starts with "-"), init, MaxDepth hops or ctx's
// end, whichever comes first. It never fails: what could not be read is
// said in End, and every hop read before is kept.
func (p Proc) Ancestry(ctx context.Context, pid int32) Ancestry {
	var a Ancestry
	a.End = p.walk(ctx, pid, func(h Hop) { a.Hops = append(a.Hops, h) })
	return a
}

// walk is Ancestry, passing each hop to emit as it is read; it returns End.
func (p Proc) walk(ctx context.Context, pid int32, emit func(Hop)) string {
	for n := 0; pid > 0; n++ {
		if ctx.Err() != nil {
			return EndTimeout
		}
		if n == MaxDepth {
			return EndDepth
		}
		b, _, err := readBounded(p.path(pid, "stat"))
		if err != nil {
			return endOf(pid, err)
		}
		st, err := parseStat(b)
		if err != nil {
			return fmt.Sprintf("unreadable: pid %d: %s", pid, err)
		}
		h := Hop{PID: pid, Comm: st.comm, Exe: p.Exe(pid)}
		if cl, full, err := readBounded(p.path(pid, "cmdline")); err == nil {
			h.Argv, h.ArgvCut = parseArgv(cl, full)
		}
		// The stat is read again after exe and cmdline: if the process
		// exited meanwhile, they may belong to a reused pid.
		if _, _, err := readBounded(p.path(pid, "stat")); err != nil {
			return endOf(pid, err)
		}
		emit(h)
		switch {
		case st.session == pid:
			return EndSessionLeader
		case len(h.Argv) > 0 && strings.HasPrefix(h.Argv[0], "-"):
			return EndLoginShell
		case pid == 1 || st.ppid <= 0:
			return EndInit
		}
		pid = st.ppid
	}
	return EndInit
}

// endOf is the End of a walk that could not read pid.
func endOf(pid int32, err error) string {
	if gone(err) {
		return fmt.Sprintf("%s (pid %d)", EndExited, pid)
	}
	return fmt.Sprintf("unreadable: pid %d: %s", pid, why(err))
}

// WalkAncestry is Ancestry within WalkTimeout of ctx: a walk held up
// reading a hostile process's memory returns the hops it read, ending
// EndTimeout. The reading goroutine then finishes on its own; sem bounds
// how many walks can run at once, so that few such goroutines can be left
// over (a full sem skips the walk, ending EndBusy). A walk that ended
// within the time has given its slot back when WalkAncestry returns; one
// that timed out gives it back when its goroutine ends. sem may be nil for
// no bound.
func (p Proc) WalkAncestry(ctx context.Context, pid int32, sem chan struct{}) Ancestry {
	if sem != nil {
		select {
		case sem <- struct{}{}:
		default:
			return Ancestry{End: EndBusy}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, WalkTimeout)
	defer cancel()
	// The walker appends each hop under mu, and the caller takes what is
	// there when the walk ends or times out: one wake-up per walk, not one
	// per hop.
	var (
		mu   sync.Mutex
		a    Ancestry
		done = make(chan struct{})
	)
	go func() {
		end := p.walk(ctx, pid, func(h Hop) {
			mu.Lock()
			a.Hops = append(a.Hops, h)
			mu.Unlock()
		})
		mu.Lock()
		a.End = end
		mu.Unlock()
		// The slot is given back before done is closed: a walk that
		// ended in time has given it back when WalkAncestry returns.
		if sem != nil {
			<-sem
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	mu.Lock()
	defer mu.Unlock()
	out := Ancestry{Hops: slices.Clip(a.Hops), End: a.End}
	if out.End == "" {
		out.End = EndTimeout
	}
	// A walk that goes on after a timeout appends to its own slice, never
	// to the one returned.
	a.Hops = nil
	return out
}
