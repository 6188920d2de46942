package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"golang.org/x/sys/unix"
)

// listFDs is a stage that prints the descriptors its shell has open, from
// its own /proc/PID/fd (checked one by one with stat, so that listing opens
// no descriptor of its own).
func listFDs(t testing.TB) Command {
	var nums []string
	for n := range 64 {
		nums = append(nums, strconv.Itoa(n))
	}
	script := "for n in " + strings.Join(nums, " ") + "; do [ -e /proc/$$/fd/$n ] && printf '%s ' $n; done; true"
	c := cmd(t, "sh", "-c", script)
	f, err := OpenProgram(Resolved{Path: c.Path, Link: c.Link})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	c.Program = f
	return c
}

// TestChildGetsOnlyStdio checks, in each mode, that a stage has exactly fds
// 0, 1 and 2 open although the daemon holds a descriptor that a library
// created without close-on-exec (as the terminal reader's epoll_create1(0)
// did) and the program and working directory descriptors of the request.
func TestChildGetsOnlyStdio(t *testing.T) {
	requireRoot(t)
	leak, err := unix.EpollCreate1(0) // no EPOLL_CLOEXEC, on purpose
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	for _, m := range allModes() {
		t.Run(string(m), func(t *testing.T) {
			requireSudo(t, m)
			if _, err := unix.FcntlInt(uintptr(leak), unix.F_SETFD, 0); err != nil {
				t.Fatal(err)
			}
			s := newSpec(t, m, "nobody", listFDs(t))
			d, err := OpenDir("/", "/")
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			s.DirFile = d
			res := mustRun(t, s)
			defer res.Release()
			got := strings.Fields(string(res.Stdout.Copy()))
			if !slices.Equal(got, []string{"0", "1", "2"}) {
				t.Errorf("the stage had fds %v open, want only 0 1 2 (stderr %q)", got, res.Stages[0].Stderr.Copy())
			}
		})
	}
}

// TestExecThroughDescriptor checks that direct mode runs the file opened at
// plan time: replacing the path (rename over it) afterwards changes nothing,
// and rewriting the opened file in place is refused, before any stage of
// the pipeline has started.
func TestExecThroughDescriptor(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool")
	write := func(p, body string) {
		testenv.WriteExecutable(t, p, []byte("#!/bin/sh\necho "+body+"\n"))
	}
	open := func() Command {
		write(tool, "approved")
		r, err := Resolve(tool, testSecurePath)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Untrusted) == 0 {
			t.Fatalf("Resolve(%s): no untrusted path reported for a program under %s", tool, dir)
		}
		f, err := OpenProgram(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		if !f.Script {
			t.Fatal("a #! file is not recognised as a script")
		}
		return Command{Path: r.Path, Link: r.Link, Args: []string{"tool"}, Program: f}
	}

	t.Run("replaced path", func(t *testing.T) {
		c := open()
		write(tool+".new", "swapped")
		if err := os.Rename(tool+".new", tool); err != nil {
			t.Fatal(err)
		}
		res := mustRun(t, newSpec(t, ModeDirect, "root", c))
		defer res.Release()
		if got := string(res.Stdout.Copy()); got != "approved\n" {
			t.Errorf("stdout %q (stderr %q), want the approved file's output", got, res.Stages[0].Stderr.Copy())
		}
	})
	t.Run("rewritten in place", func(t *testing.T) {
		c := open()
		testenv.WriteExecutable(t, tool, []byte("#!/bin/sh\necho rewritten\n"))
		s := newSpec(t, ModeDirect, "root", c)
		res, err := Run(t.Context(), s)
		if err == nil {
			defer res.Release()
			t.Fatalf("a program rewritten after it was opened ran: stdout %q", res.Stdout.Copy())
		}
		if !strings.Contains(err.Error(), "content changed") {
			t.Errorf("error %q does not say the content changed", err)
		}
	})
	t.Run("rewritten in a later stage", func(t *testing.T) {
		first, last := cmd(t, "true"), open()
		testenv.WriteExecutable(t, tool, []byte("#!/bin/sh\necho rewritten\n"))
		p := &pipeline{spec: newSpec(t, ModeDirect, "root", first, last)}
		res, err := p.run(t.Context())
		if err == nil {
			defer res.Release()
			t.Fatalf("a pipeline whose last program was rewritten ran: stdout %q", res.Stdout.Copy())
		}
		if !strings.Contains(err.Error(), "content changed") {
			t.Errorf("error %q does not say the content changed", err)
		}
		if len(p.procs) != 0 {
			t.Errorf("%d stage(s) started before the rewritten program was refused; want none", len(p.procs))
		}
	})
}

// TestCwdThroughDescriptor checks that the stages enter the directory
// opened at plan time even when its path leads elsewhere by then.
func TestCwdThroughDescriptor(t *testing.T) {
	requireRoot(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, b, link := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "proj")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	r, err := ResolveDir(link)
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != a || !slices.Equal(r.Chain, []string{link, a}) {
		t.Fatalf("ResolveDir(%s) = %+v, want path %s and chain [%s %s]", link, r, a, link, a)
	}
	d, err := OpenDir(link, r.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	for _, m := range allModes() {
		t.Run(string(m), func(t *testing.T) {
			requireSudo(t, m)
			s := newSpec(t, m, "root", cmd(t, "pwd", "-P"))
			s.Dir, s.DirFile = r.Path, d
			res := mustRun(t, s)
			defer res.Release()
			if got := strings.TrimSpace(string(res.Stdout.Copy())); got != a {
				t.Errorf("the stage ran in %q (stderr %q), want %s", got, res.Stages[0].Stderr.Copy(), a)
			}
		})
	}
}

// TestExecDescriptorNotStomped checks that a program descriptor numbered
// just above the stage's stdio is still the program when the child execs
// it. Go's child moves its error pipe onto that number before exec; the
// daemon used to exec /proc/self/fd/N there and fail with "permission
// denied" (exec of a pipe) whenever the numbers lined up, as they did under
// load in TestE2ELoad.
func TestExecDescriptorNotStomped(t *testing.T) {
	requireRoot(t)
	c := cmd(t, "true")
	prog, err := OpenProgram(Resolved{Path: c.Path, Link: c.Link})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prog.Close() })
	// stdio at base..base+2 and the program at base+3, far above the lowest
	// free numbers where the child's error pipe is created.
	base := freeRun(t, 4)
	var stdio [3]*os.File
	for i := range stdio {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		stdio[i] = moveFD(t, null, base+i)
		t.Cleanup(func() { _ = stdio[i].Close() })
	}
	prog.F = moveFD(t, prog.F, base+3)
	c.Program = prog

	p := &pipeline{spec: newSpec(t, ModeDirect, "root", c)}
	if err := p.start(0, stdio); err != nil {
		t.Fatalf("starting a program whose descriptor is %d, just above stdio %d-%d: %v", base+3, base, base+2, err)
	}
	st, err := p.procs[0].Wait()
	if err != nil {
		t.Fatal(err)
	}
	if code := st.ExitCode(); code != 0 {
		t.Errorf("true exited %d", code)
	}
}

// freeRun returns the first of n consecutive unused descriptor numbers from
// 100 up.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	for base := 100; base < 1000; base++ {
		free := true
		for fd := base; fd < base+n; fd++ {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
				free = false
				break
			}
		}
		if free {
			return base
		}
	}
	t.Fatal("no run of free descriptors below 1000")
	return 0
}

// moveFD renumbers f to fd (close-on-exec) and closes the old number.
func moveFD(t *testing.T, f *os.File, fd int) *os.File {
	t.Helper()
	if err := unix.Dup3(int(f.Fd()), fd, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), name)
}
