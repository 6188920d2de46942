package procinfo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// fakeProc builds a /proc tree: each process is pid -> files.
func fakeProc(t *testing.T, procs map[int32]map[string]string) Proc {
	t.Helper()
	dir := t.TempDir()
	for pid, files := range procs {
		d := filepath.Join(dir, fmt.Sprint(pid))
		if err := os.MkdirAll(filepath.Join(d, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			p := filepath.Join(d, name)
			if strings.HasPrefix(content, "->") {
				if err := os.Symlink(strings.TrimPrefix(content, "->"), p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return Proc{Dir: dir}
}

func proc(comm string, ppid, sid int32, exe string, argv ...string) map[string]string {
	return map[string]string{
		"stat":    fmt.Sprintf("1 (%s) S %d 1 %d 0 -1", comm, ppid, sid),
		"exe":     "->" + exe,
		"cmdline": strings.Join(argv, "\x00") + "\x00",
	}
}

// TestAncestryOfThisProcess: the walk of a real process starts at it, with
// its exe, and follows the kernel's parent links.
func TestAncestryOfThisProcess(t *testing.T) {
	a := Proc{}.Ancestry(context.Background(), int32(os.Getpid()))
	if len(a.Hops) == 0 {
		t.Fatalf("no hops, end %q", a.End)
	}
	self, _ := os.Executable()
	if a.Hops[0].PID != int32(os.Getpid()) || a.Hops[0].Exe != self {
		t.Errorf("first hop = %+v, want pid %d exe %s", a.Hops[0], os.Getpid(), self)
	}
	if len(a.Hops) > 1 && a.Hops[1].PID != int32(os.Getppid()) {
		t.Errorf("second hop pid %d, want our parent %d", a.Hops[1].PID, os.Getppid())
	}
	if a.End == "" {
		t.Error("End empty")
	}
}

// TestAncestryStops: the walk ends at a session leader, a login shell,
// init, or MaxDepth hops, and says which.
func TestAncestryStops(t *testing.T) {
	tests := []struct {
		name  string
		procs map[int32]map[string]string
		hops  []int32
		end   string
	}{
		{"session leader", map[int32]map[string]string{
			30: proc("agent-sudo", 20, 10, "/usr/bin/agent-sudo", "agent-sudo", "mcp"),
			20: proc("claude", 10, 10, "/usr/bin/node", "claude"),
			10: proc("bash", 5, 10, "/usr/bin/bash", "bash"),
			5:  proc("sshd", 1, 5, "/usr/sbin/sshd", "sshd"),
		}, []int32{30, 20, 10}, EndSessionLeader},
		{"login shell", map[int32]map[string]string{
			30: proc("agent-sudo", 20, 1, "/usr/bin/agent-sudo", "agent-sudo"),
			20: proc("bash", 10, 1, "/usr/bin/bash", "-bash"),
			10: proc("login", 1, 1, "/usr/bin/login", "login"),
		}, []int32{30, 20}, EndLoginShell},
		{"init", map[int32]map[string]string{
			30: proc("x", 1, 7, "/x", "x"),
			1:  proc("systemd", 0, 0, "/sbin/init", "/sbin/init"),
		}, []int32{30, 1}, EndInit},
	}
	deep := map[int32]map[string]string{}
	for pid := int32(100); pid > 80; pid-- {
		deep[pid] = proc("p", pid-1, 1, "/bin/p", "p")
	}
	tests = append(tests, struct {
		name  string
		procs map[int32]map[string]string
		hops  []int32
		end   string
	}{"depth", deep, []int32{100, 99, 98, 97, 96, 95, 94, 93}, EndDepth})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := fakeProc(t, tt.procs).Ancestry(context.Background(), tt.hops[0])
			var got []int32
			for _, h := range a.Hops {
				got = append(got, h.PID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.hops) || a.End != tt.end {
				t.Errorf("hops %v end %q, want %v %q", got, a.End, tt.hops, tt.end)
			}
		})
	}
}

// TestAncestryExitedMidWalk: a parent that is gone ends the walk with a
// marker; the hops read before are kept.
func TestAncestryExitedMidWalk(t *testing.T) {
	p := fakeProc(t, map[int32]map[string]string{
		30: proc("agent-sudo", 20, 1, "/usr/bin/agent-sudo", "agent-sudo"),
	})
	a := p.Ancestry(context.Background(), 30)
	if len(a.Hops) != 1 || a.Hops[0].PID != 30 || !strings.HasPrefix(a.End, EndExited) || !strings.Contains(a.End, "pid 20") {
		t.Errorf("got %+v, want hop 30 and end %q (pid 20)", a, EndExited)
	}
	// The peer itself gone: no hops, still a marker.
	a = p.Ancestry(context.Background(), 31)
	if len(a.Hops) != 0 || !strings.HasPrefix(a.End, EndExited) {
		t.Errorf("got %+v, want no hops and end %q", a, EndExited)
	}
	// exe unreadable: the hop says so.
	p = fakeProc(t, map[int32]map[string]string{30: {"stat": "30 (x) S 0 30 30", "cmdline": ""}})
	a = p.Ancestry(context.Background(), 30)
	if len(a.Hops) != 1 || !strings.HasPrefix(a.Hops[0].Exe, "(unknown: ") || a.Hops[0].Argv != nil {
		t.Errorf("got %+v, want exe (unknown: ...) and no argv", a)
	}
}

// TestAncestryOfExitedRealProcess: a real process that has exited and been
// reaped cannot be read; the walk says so rather than failing.
func TestAncestryOfExitedRealProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	a := Proc{}.Ancestry(context.Background(), int32(cmd.Process.Pid))
	if len(a.Hops) != 0 || !strings.HasPrefix(a.End, EndExited) {
		t.Errorf("got %+v, want no hops and %q", a, EndExited)
	}
}

// TestHostileNames: comm with ")" and control characters, argv with
// control characters and huge elements are kept bounded and raw (callers
// escape them).
func TestHostileNames(t *testing.T) {
	comm := "a) S 1 1 1 (\x1b[2J"
	long := strings.Repeat("é", 1000)
	p := fakeProc(t, map[int32]map[string]string{
		30: {"stat": "30 (" + comm + ") S 1 30 30 0", "exe": "->/bin/x\x1b]0;t\x07",
			"cmdline": "\x1b[31mclaude\x00" + long + "\x00a\x00b\x00c\x00d\x00"},
	})
	a := p.Ancestry(context.Background(), 30)
	if len(a.Hops) != 1 || a.End != EndSessionLeader {
		t.Fatalf("got %+v", a)
	}
	h := a.Hops[0]
	if h.Comm != comm || h.Exe != "/bin/x\x1b]0;t\x07" {
		t.Errorf("comm %q exe %q", h.Comm, h.Exe)
	}
	if len(h.Argv) != MaxArgs || !h.ArgvCut || len(h.Argv[1]) > MaxArg || !utf8.ValidString(h.Argv[1]) {
		t.Errorf("argv %q cut %v: want %d elements, each ≤ %d bytes, valid UTF-8 where the input was", h.Argv, h.ArgvCut, MaxArgs, MaxArg)
	}
	if h.Argv[0] != "\x1b[31mclaude" {
		t.Errorf("argv[0] = %q, want it raw", h.Argv[0])
	}
}

// TestWalkAncestryBusy: a full semaphore skips the walk with a marker.
func TestWalkAncestryBusy(t *testing.T) {
	sem := make(chan struct{}, 1)
	sem <- struct{}{}
	a := Proc{}.WalkAncestry(context.Background(), int32(os.Getpid()), sem)
	if a.End != EndBusy || len(a.Hops) != 0 {
		t.Errorf("got %+v, want %q", a, EndBusy)
	}
	<-sem
	a = Proc{}.WalkAncestry(context.Background(), int32(os.Getpid()), sem)
	if len(a.Hops) == 0 || len(sem) != 0 {
		t.Errorf("got %+v, sem %d; want hops and the slot given back", a, len(sem))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a = Proc{}.WalkAncestry(ctx, int32(os.Getpid()), nil)
	if a.End != EndTimeout {
		t.Errorf("cancelled walk: got %+v, want %q", a, EndTimeout)
	}
}

func TestInnerID(t *testing.T) {
	m := []byte("         0       1000          1\n         1     100000      65536\n")
	for _, tt := range []struct {
		id   uint32
		want uint32
		ok   bool
	}{{1000, 0, true}, {100000, 1, true}, {100005, 6, true}, {165536, 0, false}, {999, 0, false}} {
		got, ok := innerID(m, tt.id)
		if got != tt.want || ok != tt.ok {
			t.Errorf("innerID(%d) = %d, %v; want %d, %v", tt.id, got, ok, tt.want, tt.ok)
		}
	}
}

// TestPersonFake: loginuid, SUDO_* and an unset loginuid.
func TestPersonFake(t *testing.T) {
	p := fakeProc(t, map[int32]map[string]string{
		7: {"loginuid": "1000", "environ": "HOME=/root\x00SUDO_USER=alice\x00SUDO_UID=1000\x00"},
		8: {"loginuid": "4294967295"},
	})
	who := p.Person(7)
	if who.LoginUID == nil || *who.LoginUID != 1000 || who.SudoUser != "alice" || who.SudoUID != "1000" {
		t.Errorf("Person(7) = %+v", who)
	}
	if who := p.Person(8); who.LoginUID != nil || who.SudoUser != "" {
		t.Errorf("Person(8) = %+v, want nothing", who)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (systemd) S 0 1 1 0 -1 4194560"))
	f.Add([]byte("30 (a) S 1 1 1 () S 2 3 4 5"))
	f.Add([]byte("30 (\x1b[2J\n) R 1 2 3"))
	f.Add([]byte(")("))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStat(b)
		if err == nil && len(st.comm) > len(b) {
			t.Fatalf("comm longer than input")
		}
	})
}

func FuzzParseArgv(f *testing.F) {
	f.Add([]byte("claude\x00--mcp\x00"), true)
	f.Add([]byte(strings.Repeat("\xe9", 300)), false)
	f.Add([]byte("\x00\x00\x00"), true)
	f.Fuzz(func(t *testing.T, b []byte, full bool) {
		argv, cut := parseArgv(b, full)
		if len(argv) > MaxArgs {
			t.Fatalf("%d elements", len(argv))
		}
		for _, a := range argv {
			if len(a) > MaxArg {
				t.Fatalf("element of %d bytes", len(a))
			}
		}
		if !full && !cut {
			t.Fatal("a partial read not marked cut")
		}
	})
}

func FuzzParseProcFiles(f *testing.F) {
	f.Add([]byte("Name:\tx\nNSpid:\t40\t1\n"), []byte("0 1000 1\n"), []byte("0::/a\n"), "pid:[123]", uint32(1000))
	f.Fuzz(func(t *testing.T, status, uidMap, cgroup []byte, link string, id uint32) {
		_ = parseNSpid(status)
		_, _ = innerID(uidMap, id)
		if s := cgroupOf(cgroup); len(s) > 2*MaxArg+len("…") {
			t.Fatalf("cgroup of %d bytes", len(s))
		}
		_, _ = parseNSLink(link)
	})
}

// TestContainerOwnNamespaces: a Proc with Own compares the peer's
// namespaces with Own, not with /proc/self, and finds the same container
// as one that reads /proc/self each time; a kind missing from Own is never
// reported as foreign.
func TestContainerOwnNamespaces(t *testing.T) {
	links := func(inode map[string]int) map[string]string {
		m := map[string]string{}
		for _, kind := range Namespaces {
			n := 1
			if v, ok := inode[kind]; ok {
				n = v
			}
			m["ns/"+kind] = fmt.Sprintf("->%s:[%d]", kind, n)
		}
		return m
	}
	peer := links(map[string]int{"user": 7, "net": 8})
	peer["uid_map"] = "         0       1000          1\n"
	peer["cgroup"] = "0::/sandbox\n"
	p := fakeProc(t, map[int32]map[string]string{100: peer})
	// /proc/self of the fake tree: every namespace numbered 1.
	if err := os.MkdirAll(filepath.Join(p.Dir, "self", "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links(nil) {
		if err := os.Symlink(strings.TrimPrefix(target, "->"), filepath.Join(p.Dir, "self", name)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	show := func(c *Container) string {
		if c == nil {
			return "none"
		}
		inner := "-"
		if c.InnerUID != nil {
			inner = fmt.Sprint(*c.InnerUID)
		}
		var kinds []string
		for _, k := range Namespaces {
			if _, ok := c.NS[k]; ok {
				kinds = append(kinds, k)
			}
		}
		return fmt.Sprintf("ns %v inner uid %s cgroup %q", kinds, inner, c.Cgroup)
	}
	want := show(p.Container(ctx, 100, 1000))
	if want != `ns [user net] inner uid 0 cgroup "0::/sandbox"` {
		t.Fatalf("reading /proc/self: %s", want)
	}
	cached := p
	cached.Own = p.OwnNamespaces()
	if len(cached.Own) != len(Namespaces) {
		t.Fatalf("OwnNamespaces read %v", cached.Own)
	}
	// The fake /proc/self is gone: only Own can say the daemon's.
	if err := os.RemoveAll(filepath.Join(p.Dir, "self")); err != nil {
		t.Fatal(err)
	}
	if got := show(cached.Container(ctx, 100, 1000)); got != want {
		t.Errorf("with Own: %s, want %s", got, want)
	}
	if got := show(p.Container(ctx, 100, 1000)); got != "none" {
		t.Errorf("without Own and without /proc/self: %s, want none", got)
	}
	delete(cached.Own, "user")
	if got := show(cached.Container(ctx, 100, 1000)); got != "none" {
		t.Errorf("user missing from Own: %s, want none (net alone is not a container)", got)
	}
}

// TestReadBounded: a file is cut after MaxRead bytes (package sysfile
// tests the reading), and a missing one is "gone".
func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "big")
	if err := os.WriteFile(name, make([]byte, 3*MaxRead), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, whole, err := readBounded(name); err != nil || len(b) != MaxRead || whole {
		t.Errorf("3×MaxRead bytes: got %d bytes, whole %v, %v; want MaxRead, cut", len(b), whole, err)
	}
	if _, _, err := readBounded(filepath.Join(dir, "missing")); !gone(err) {
		t.Errorf("missing file: %v, want one that says gone", err)
	}
}
