package notify

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"

	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"golang.org/x/sys/unix"
)

// hostile is a request whose every agent-chosen value tries something: a
// terminal escape, a newline that would start a second line, a bidi
// override, a placeholder that must not be expanded again, and a length far
// beyond the bound.
var hostile = Values{Request: &approval.Shown{
	ID:      "id\x1b]0;pwned\x07",
	Session: "s{command}\r\nFAKE: approved\x1b[2J{",
	Host:    "h\u202eost",
	Reason:  "line one\nline two\x00\x9b" + strings.Repeat("R", 1000),
	Peer:    approval.PeerInfo{User: "alice", UID: 1000},
	RunAs:   "root",
	Pipeline: [][]string{
		{"/usr/bin/printf", "%s\n", "\x1b[31mred{session}"},
		{"/usr/bin/tee", strings.Repeat("\u00e9\x1b", 400)},
	},
}}

// checkSafe fails t unless arg is one line of printable text: no C0 or C1
// control, no DEL, valid UTF-8.
func checkSafe(t *testing.T, what, arg string) {
	t.Helper()
	for i, r := range arg {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfffd && !strings.Contains(arg[i:], "\ufffd") || r == '\u202e' {
			t.Errorf("%s holds %U at byte %d: %q", what, r, i, arg)
		}
	}
}

func TestExpandHostile(t *testing.T) {
	c, err := compile("notify[0]", []string{"/usr/bin/notify-send", "agent-sudo: {session} asks", "$ {command}", "{{{id}}} on {host}: {reason}", "by {user} {uid} {run_as}"})
	if err != nil {
		t.Fatal(err)
	}
	argv := c.expand(hostile.escaped())
	if len(argv) != 5 || argv[0] != "/usr/bin/notify-send" {
		t.Fatalf("argv = %q, want the program and 4 arguments", argv)
	}
	for i, a := range argv {
		checkSafe(t, "argv["+strconv.Itoa(i)+"]", a)
	}
	// Each value is bounded: the literal text plus MaxValue per placeholder.
	bounds := []int{0, len("agent-sudo:  asks") + MaxValue, len("$ ") + MaxValue, len("{} on : ") + 3*MaxValue, len("by ") + 3*MaxValue + 2}
	for i := 1; i < len(argv); i++ {
		if len(argv[i]) > bounds[i] {
			t.Errorf("argv[%d] is %d bytes, more than %d: %q", i, len(argv[i]), bounds[i], argv[i])
		}
	}
	want1 := `agent-sudo: s{command}\r\nFAKE: approved\x1b[2J{ asks`
	if argv[1] != want1 {
		t.Errorf("argv[1] = %q, want %q (escaped, and {command} in the session not expanded)", argv[1], want1)
	}
	if !strings.HasPrefix(argv[2], `$ /usr/bin/printf $'%s\n' $'\x1b[31mred{session}' | /usr/bin/tee $'`) || !strings.HasSuffix(argv[2], "...") {
		t.Errorf("argv[2] = %q, want the command line, escaped, {session} not expanded, cut with ...", argv[2])
	}
	if !strings.HasPrefix(argv[3], `{id\x1b]0;pwned\x07} on h\u202eost: line one\nline two\x00\x9b`) || !strings.HasSuffix(argv[3], "RRR...") {
		t.Errorf("argv[3] = %q, want literal braces around the escaped id, the escaped host and the reason cut with ...", argv[3])
	}
	if argv[4] != "by alice 1000 root" {
		t.Errorf("argv[4] = %q, want %q", argv[4], "by alice 1000 root")
	}
}

func TestBound(t *testing.T) {
	long := strings.Repeat("a", MaxValue-4)
	tests := []struct{ in, want string }{
		{"short", "short"},
		{strings.Repeat("x", MaxValue), strings.Repeat("x", MaxValue)},
		{strings.Repeat("x", MaxValue+1), strings.Repeat("x", MaxValue-3) + "..."},
		// An escape that would straddle the cut is left out whole.
		{long + `\x1b` + "zzzz", long + "..."},
		{long[:len(long)-3] + `\U0001f1eb` + "zzzz", long[:len(long)-3] + "..."},
		{long[:len(long)-1] + `\\` + "zzzz", long[:len(long)-1] + `\\` + "..."[:1] + ".."},
		// A character is never cut in two.
		{long[:len(long)-1] + "日本" + "zzzz", long[:len(long)-1] + "..."},
	}
	for _, tt := range tests {
		if got := bound(tt.in); got != tt.want {
			t.Errorf("bound(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
		if got := bound(tt.in); len(got) > MaxValue {
			t.Errorf("bound(%q) is %d bytes, more than %d", tt.in, len(got), MaxValue)
		}
	}
}

// recorder is a slog handler that keeps every record's message and
// attributes and tells waiters when one arrives.
type recorder struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func newRecorder() *recorder { return &recorder{added: make(chan struct{}, 1000)} }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	r.added <- struct{}{}
	return nil
}
func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler { return &withAttrs{r, as} }
func (r *recorder) WithGroup(string) slog.Handler         { return r }

// wait blocks until a line containing s was logged, and returns it.
func (r *recorder) wait(t *testing.T, s string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		r.mu.Lock()
		i := slices.IndexFunc(r.lines, func(l string) bool { return strings.Contains(l, s) })
		var l string
		if i >= 0 {
			l = r.lines[i]
		}
		r.mu.Unlock()
		if i >= 0 {
			return l
		}
		select {
		case <-r.added:
		case <-timeout:
			t.Fatalf("no log line containing %q; got %q", s, r.lines)
		}
	}
}

type withAttrs struct {
	*recorder
	as []slog.Attr
}

func (w *withAttrs) Handle(ctx context.Context, rec slog.Record) error {
	rec.AddAttrs(w.as...)
	return w.recorder.Handle(ctx, rec)
}
func (w *withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return &withAttrs{w.recorder, append(slices.Clone(w.as), as...)}
}

// trustedDir makes a directory only root can write, on a path only root
// can change (runner.Resolve must find nothing untrusted), with a
// subdirectory "out" that every user can write to.
func trustedDir(t *testing.T) (dir, out string) {
	t.Helper()
	testenv.NeedsRoot(t)
	dir, err := os.MkdirTemp("/run", "agent-sudo-notify-test")
	if err != nil {
		t.Skipf("no directory only root can write: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir, out
}

// script writes an executable shell script into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	testenv.WriteExecutable(t, p, []byte("#!/bin/sh\n"+body))
	return p
}

// TestRunsAsNotifyUserWithCleanEnv: a notifier runs as notify_user with its
// groups, in "/", with exactly the documented environment, in a process
// group of its own, with its standard input from /dev/null, and gets its
// arguments escaped and bounded.
func TestRunsAsNotifyUserWithCleanEnv(t *testing.T) {
	dir, out := trustedDir(t)
	prog := script(t, dir, "record", `
out="$1"; shift
{ id -u; id -g; id -G; pwd; ps -o pgid= -p $$ | tr -d ' '; echo $$; readlink /proc/$$/fd/0; } > "$out/ids"
env > "$out/env"
printf '%s\0' "$@" > "$out/argv"
`)
	t.Setenv("SECRET_OF_THE_DAEMON", "x") // must not reach the notifier
	s, err := Prepare([][]string{{prog, out, "s {session}", "c {command}", "r {reason}"}}, "nobody", time.Minute, "/usr/bin:/bin")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	r := NewRunner(slog.New(rec))
	r.Start(t.Context(), s, hostile)
	r.Wait()
	if strings.Contains(strings.Join(rec.lines, "\n"), "notifier failed") {
		t.Fatalf("the notifier failed: %q", rec.lines)
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	ids := readLines(t, filepath.Join(out, "ids"))
	if len(ids) != 7 || ids[0] != nobody.Uid || ids[1] != nobody.Gid || ids[3] != "/" || ids[4] != ids[5] || ids[6] != "/dev/null" {
		t.Errorf("uid, gid, groups, cwd, pgid, pid, stdin = %q; want nobody's uid %s and gid %s, cwd /, a process group of its own and /dev/null", ids, nobody.Uid, nobody.Gid)
	}
	if gs := strings.Fields(ids[2]); slices.Contains(gs, "0") {
		t.Errorf("groups %q include root's", gs)
	}
	env := readLines(t, filepath.Join(out, "env"))
	// sh adds PWD (and may add SHLVL, OLDPWD, _) itself.
	env = slices.DeleteFunc(env, func(l string) bool {
		return strings.HasPrefix(l, "PWD=") || strings.HasPrefix(l, "SHLVL=") || strings.HasPrefix(l, "OLDPWD=") || strings.HasPrefix(l, "_=")
	})
	slices.Sort(env)
	// HOME is "/", never the user's home, whose dotfiles may be the agent's.
	want := []string{"HOME=/", "LANG=C.UTF-8", "LOGNAME=nobody", "PATH=/usr/bin:/bin", "USER=nobody"}
	if !slices.Equal(env, want) {
		t.Errorf("environment = %q, want %q", env, want)
	}
	raw, err := os.ReadFile(filepath.Join(out, "argv"))
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	v := hostile.escaped()
	if len(argv) != 3 || argv[0] != "s "+v["session"] || argv[1] != "c "+v["command"] || argv[2] != "r "+v["reason"] {
		t.Fatalf("argv = %q, want the escaped values %q after their prefixes", argv, []string{v["session"], v["command"], v["reason"]})
	}
	for i, a := range argv {
		checkSafe(t, "argv["+strconv.Itoa(i+1)+"]", a)
		if len(a) > len("s ")+MaxValue {
			t.Errorf("argv[%d] is %d bytes, more than %d", i+1, len(a), len("s ")+MaxValue)
		}
	}
}

func readLines(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// alive reports whether process pid exists (and is not a zombie).
func alive(pid int) bool {
	st, err := testenv.ReadProcStat(pid)
	return err == nil && st.State() != "Z"
}

// exited waits up to a minute for process pid to exit (a SIGKILL sent to
// it is delivered asynchronously) and reports whether it did.
func exited(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return !alive(pid) // gone already, or pidfd unsupported
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 60_000)
		if err == unix.EINTR {
			continue
		}
		return n > 0 || !alive(pid)
	}
}

// waitFile waits until p exists and is not empty.
func waitFile(t *testing.T, rec *recorder, p string) string {
	t.Helper()
	for range 600 {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 && strings.HasSuffix(string(b), "\n") {
			return string(b)
		}
		select {
		case <-rec.added:
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("%s was never written", p)
	return ""
}

// TestTimeoutKillsProcessGroup: a notifier that hangs is killed at
// notify_timeout with every process of its group, and the log says so.
func TestTimeoutKillsProcessGroup(t *testing.T) {
	dir, out := trustedDir(t)
	prog := script(t, dir, "hang", `
sleep 1000 &
echo "$$ $!" > "$1/pids"
echo "started, output that is logged"
wait
`)
	s, err := Prepare([][]string{{prog, out}}, "nobody", 500*time.Millisecond, "/usr/bin:/bin")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	r := NewRunner(slog.New(rec))
	r.Start(t.Context(), s, Values{Request: &approval.Shown{ID: "x"}})
	pids := strings.Fields(waitFile(t, rec, filepath.Join(out, "pids")))
	line := rec.wait(t, "notifier timed out")
	r.Wait()
	if !strings.Contains(line, "started, output that is logged") || !strings.Contains(line, "notify_timeout=500ms") {
		t.Errorf("log line %q should give the timeout and the notifier's output", line)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		if !exited(pid) {
			t.Errorf("process %d of the notifier's group survived its timeout", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestMaxRunning: no more than MaxRunning notifiers run at once; one more
// is not started, and the log says so.
func TestMaxRunning(t *testing.T) {
	dir, out := trustedDir(t)
	prog := script(t, dir, "hang", `echo $$ >> "$1/pids"; exec sleep 1000`)
	s, err := Prepare([][]string{{prog, out}}, "nobody", time.Hour, "/usr/bin:/bin")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	r := NewRunner(slog.New(rec))
	ctx, cancel := context.WithCancel(t.Context())
	for i := range MaxRunning + 1 {
		r.Start(ctx, s, Values{Request: &approval.Shown{ID: strconv.Itoa(i)}})
	}
	line := rec.wait(t, "notifier not run: too many notifiers are running already")
	if !strings.Contains(line, "id="+strconv.Itoa(MaxRunning)) {
		t.Errorf("log line %q should name the request whose notifier was not run, %d", line, MaxRunning)
	}
	// The running ones end with the context (the daemon stopping).
	cancel()
	r.Wait()
	if n := strings.Count(strings.Join(rec.lines, "\n"), "notifier killed: the daemon is stopping"); n > MaxRunning {
		t.Errorf("%d notifiers were killed, more than MaxRunning = %d ran", n, MaxRunning)
	}
}

// TestPrepare: the programs and the user are checked when the daemon
// starts or reloads, with messages naming the notifier.
func TestPrepare(t *testing.T) {
	testenv.NeedsRoot(t)
	tmp := t.TempDir()
	loose := filepath.Join(tmp, "loose")
	testenv.WriteExecutable(t, loose, []byte("#!/bin/sh\n"))
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cmds [][]string
		user string
		want string
	}{
		{[][]string{{"/nonexistent/notifier"}}, "nobody", "notify[0][0]: runner: resolving program /nonexistent/notifier"},
		{[][]string{{"/bin/true"}, {loose}}, "nobody", "notify[1][0]: " + loose + " can be changed by someone other than root ("},
		{[][]string{{"/bin/true"}}, "no-such-user-here", `notify_user: runner: looking up target user "no-such-user-here"`},
		{[][]string{{"/bin/true"}}, "root", `notify_user: "root" is root`},
		{[][]string{{"/bin/true", "{nope}"}}, "nobody", `notify[0][1]: unknown placeholder {nope}`},
		{[][]string{{"/bin/true", "{ID}"}}, "nobody", `notify[0][1]: unknown placeholder {ID} at byte 1`},
	}
	for _, tt := range tests {
		_, err := Prepare(tt.cmds, tt.user, time.Second, "/usr/bin:/bin")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Prepare(%q, %q): got %v, want an error containing %q", tt.cmds, tt.user, err, tt.want)
		}
	}
	// No notifiers: nothing else is checked.
	if s, err := Prepare(nil, "no-such-user-here", time.Second, "/usr/bin:/bin"); err != nil || s.Len() != 0 {
		t.Errorf("Prepare(nil) = %v, %v; want an empty set", s, err)
	}
}

// TestEnvDesktopSession: XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS are
// set only when the user's runtime directory exists and is the user's, and
// the bus only when its socket is there.
func TestEnvDesktopSession(t *testing.T) {
	base := t.TempDir()
	uid := uint32(os.Getuid())
	tg := runner.Target{Name: "alice", UID: uid, Home: "/home/alice"}
	// No HOME: package spawn sets HOME=/ whatever the user's home is.
	plain := []string{"PATH=/usr/bin:/bin", "USER=alice", "LOGNAME=alice", "LANG=C.UTF-8"}
	if got := envIn(base, tg, "/usr/bin:/bin"); !slices.Equal(got, plain) {
		t.Errorf("without a runtime directory: %q, want %q", got, plain)
	}
	dir := filepath.Join(base, strconv.FormatUint(uint64(uid), 10))
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	withDir := append(slices.Clone(plain), "XDG_RUNTIME_DIR="+dir)
	if got := envIn(base, tg, "/usr/bin:/bin"); !slices.Equal(got, withDir) {
		t.Errorf("with a runtime directory: %q, want %q", got, withDir)
	}
	// A plain file called bus is not the session bus.
	if err := os.WriteFile(filepath.Join(dir, "bus"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := envIn(base, tg, "/usr/bin:/bin"); !slices.Equal(got, withDir) {
		t.Errorf("with a file called bus: %q, want %q", got, withDir)
	}
	os.Remove(filepath.Join(dir, "bus"))
	ln, err := net.Listen("unix", filepath.Join(dir, "bus"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	withBus := append(slices.Clone(withDir), "DBUS_SESSION_BUS_ADDRESS=unix:path="+dir+"/bus")
	if got := envIn(base, tg, "/usr/bin:/bin"); !slices.Equal(got, withBus) {
		t.Errorf("with the bus: %q, want %q", got, withBus)
	}
	// Another user's runtime directory is not given out.
	other := tg
	other.UID = uid + 1
	if err := os.Mkdir(filepath.Join(base, strconv.FormatUint(uint64(other.UID), 10)), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := envIn(base, other, "/usr/bin:/bin"); !slices.Equal(got, plain) {
		t.Errorf("with a runtime directory owned by someone else: %q, want %q", got, plain)
	}
}

// TestFailureLogged: a notifier that fails is logged with its exit status
// and its output, escaped and bounded; nothing else happens.
func TestFailureLogged(t *testing.T) {
	dir, _ := trustedDir(t)
	prog := script(t, dir, "fail", `printf 'bad\033[2J news\n'; head -c 5000 /dev/zero | tr '\0' x; exit 3`)
	s, err := Prepare([][]string{{prog}}, "nobody", time.Minute, "/usr/bin:/bin")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	r := NewRunner(slog.New(rec))
	r.Start(t.Context(), s, Values{Request: &approval.Shown{ID: "f"}})
	r.Wait()
	line := rec.wait(t, "notifier failed")
	if !strings.Contains(line, "err=exit status 3") || !strings.Contains(line, `output=bad\x1b[2J news\nxxx`) || !strings.Contains(line, "... (4501 more bytes)") {
		t.Errorf("log line %q should give the exit status and the first %d bytes of output, escaped", line, MaxOutput)
	}
	if strings.ContainsRune(line, 0x1b) {
		t.Errorf("log line %q holds a raw ESC", line)
	}
}

// TestSpawnPolicy: a notifier is started by package spawn's policy. It
// leads a session of its own, so it has no controlling terminal (tty_nr 0
// in /proc/self/stat, /dev/tty cannot be opened); it holds exactly
// descriptors 0, 1 and 2, stdin being /dev/null, even when the daemon holds
// a descriptor without close-on-exec; HOME and its working directory are
// "/". (Under agent-sudod --tty: TestE2ENotifierCannotReachTheConsole.)
func TestSpawnPolicy(t *testing.T) {
	_, out := trustedDir(t)
	// A descriptor without close-on-exec, as a library may open one (an
	// epoll descriptor of a terminal reader) or as systemd passes a socket.
	syscall.ForkLock.Lock()
	leak, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0)
	syscall.ForkLock.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(leak) })
	// sh -c: no script file held open by the shell. No braces: they would
	// be placeholders.
	probe := `out="$1"; fds=""
for n in $(seq 0 255); do [ -e /proc/$$/fd/$n ] && fds="$fds$n "; done
tty=$(cut -d' ' -f7 /proc/$$/stat); sid=$(ps -o sid= -p $$ | tr -d ' ')
if sh -c ': < /dev/tty' 2>/dev/null; then devtty=opened; else devtty=refused; fi
printf '%s\n' "$$" "$sid" "$tty" "$devtty" "$fds" "$(readlink /proc/$$/fd/0)" "$HOME" "$(pwd)" > "$out/probe"`
	s, err := Prepare([][]string{{"/bin/sh", "-c", probe, "sh", out}}, "nobody", time.Minute, "/usr/bin:/bin")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	r := NewRunner(slog.New(rec))
	r.Start(t.Context(), s, Values{Request: &approval.Shown{ID: "probe"}})
	r.Wait()
	if strings.Contains(strings.Join(rec.lines, "\n"), "notifier failed") {
		t.Fatalf("the notifier failed: %q", rec.lines)
	}
	got := readLines(t, filepath.Join(out, "probe"))
	want := []string{got[0], got[0], "0", "refused", "0 1 2 ", "/dev/null", "/", "/"}
	if !slices.Equal(got, want) {
		t.Errorf("pid, session, tty_nr, /dev/tty, descriptors, stdin, HOME, cwd = %q;\nwant %q: a session of its own without a terminal, descriptors 0 1 2 only (the daemon's fd %d without close-on-exec not among them)", got, want, leak)
	}
}

// TestExpandMarkup: notify-send reads its body as markup, so for it each
// value is markup-escaped (the administrator's own text is not); for any
// other program the value is left as it is.
func TestExpandMarkup(t *testing.T) {
	v := Values{Request: &approval.Shown{Reason: `<b>urgent</b> & <a href="https://evil.example/">approve</a><img src="file:///etc/x">`, Session: "s<i>"}}
	const want = `&lt;b&gt;urgent&lt;/b&gt; &amp; &lt;a href="https://evil.example/"&gt;approve&lt;/a&gt;&lt;img src="file:///etc/x"&gt;`
	tests := []struct {
		argv []string
		want []string
	}{
		{[]string{"/usr/bin/notify-send", "agent-sudo: <b>{session}</b>", "reason: {reason}"},
			[]string{"/usr/bin/notify-send", "agent-sudo: <b>s&lt;i&gt;</b>", "reason: " + want}},
		{[]string{"/usr/local/bin/notify-send", "--app-name=agent-sudo", "reason: {reason}"},
			[]string{"/usr/local/bin/notify-send", "--app-name=agent-sudo", "reason: " + want}},
		{[]string{"/usr/bin/curl", "-g", "--data-raw", "reason: {reason}", "https://x/t"},
			[]string{"/usr/bin/curl", "-g", "--data-raw", "reason: " + v.escaped()["reason"], "https://x/t"}},
	}
	for _, tt := range tests {
		c, err := compile("notify[0]", tt.argv)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.expand(v.escaped()); !slices.Equal(got, tt.want) {
			t.Errorf("%q expands to\n%q\nwant\n%q", tt.argv, got, tt.want)
		}
	}
}
