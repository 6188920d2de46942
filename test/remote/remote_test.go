//go:build remote

// Package remote tests agent-sudo past one machine with a real OpenSSH
// server (Debian's openssh-server): one "agent-sudo approve" serving two
// daemons over "ssh -T root@HOST agent-sudo approver-stdio", and an agent
// reaching a daemon through "ssh -R" stream-local forwarding. It runs with
// "make remote-test" (the build tag remote), as root.
//
// The test binary re-executes itself in a network namespace of its own
// (unshare --net) with only the loopback interface, up: the sshd servers
// listen on 127.0.0.1 there, and nothing outside can reach them. In a
// mount namespace of its own (unshare --mount), /etc/hosts is Debian's
// (localhost is ::1 and 127.0.0.1). Each
// daemon runs in a UTS namespace with a host name of its own, so that two
// daemons on one machine stand in for two hosts. The keys (the servers'
// host key, the console's and the forwarding's client keys) are made by
// the test in a temporary directory and thrown away with it.
package remote

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/consoletest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// inNetns marks the re-executed test binary.
const inNetns = "AGENT_SUDO_REMOTE_TEST_NETNS"

func TestMain(m *testing.M) {
	if os.Getenv(inNetns) == "" {
		os.Exit(reexecInNetns())
	}
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(os.Stderr, "remote test: bring lo up in the new network namespace: %v\n", err)
		os.Exit(1)
	}
	if err := debianHosts(); err != nil {
		fmt.Fprintf(os.Stderr, "remote test: /etc/hosts in the new mount namespace: %v\n", err)
		os.Exit(1)
	}
	daemontest.Main(m)
}

// reexecInNetns runs this test binary again, with the same arguments, in a
// new network namespace, and returns its exit status. Without root or
// unshare it says why and fails: make remote-test never passes without
// having run.
func reexecInNetns() int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "remote test: needs root (sshd, network namespaces, the daemons); run it with make remote-test as root")
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "remote test: %v\n", err)
		return 1
	}
	cmd := exec.Command("unshare", append([]string{"--net", "--mount", "--", self}, os.Args[1:]...)...)
	cmd.Env = append(os.Environ(), inNetns+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "remote test: unshare --net: %v\n", err)
		return 1
	}
	return 0
}

// hostsFile is Debian's /etc/hosts for localhost: the name resolves to
// ::1 first, then 127.0.0.1, as on a host where the web approver's attack
// of issue 31 was found (sshd's -L forwarding tried ::1 first).
const hostsFile = "127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n"

// debianHosts puts hostsFile over /etc/hosts in this mount namespace
// (unshare --mount made it, its mounts private), so that every process of
// the test resolves localhost as a Debian host does, whatever this
// machine's /etc/hosts holds.
func debianHosts() error {
	f, err := os.CreateTemp("", "asr-hosts")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(hostsFile); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := unix.Mount(f.Name(), "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s over /etc/hosts: %w", f.Name(), err)
	}
	return nil
}

// loopbackUp sets the loopback interface of this network namespace up, as
// "ip link set lo up" does.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// sshd is a running OpenSSH server.
type sshd struct {
	port int
	logs *daemontest.Buffer
}

// keys are the test's throwaway keys and the files that name them.
type keys struct {
	dir string
	// hostKey is the servers' host key; client and forward are client
	// keys: client may only run approver-stdio, forward may only forward.
	hostKey, client, forward string
	knownHosts               string
}

// makeKeys makes the keys in dir with ssh-keygen.
func makeKeys(t *testing.T, dir string) *keys {
	t.Helper()
	k := &keys{dir: dir, hostKey: filepath.Join(dir, "host_key"), client: filepath.Join(dir, "id_approve"),
		forward: filepath.Join(dir, "id_forward"), knownHosts: filepath.Join(dir, "known_hosts")}
	for _, f := range []string{k.hostKey, k.client, k.forward} {
		run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", filepath.Base(f), "-f", f)
	}
	return k
}

// startSSHD starts sshd on 127.0.0.1:port with the keys and an
// authorized_keys file of its own: the console's key may only run
// "agent-sudo approver-stdio" (for the daemon whose approver socket is
// approverSocket), the forwarding key may only forward. bin is prepended to
// the sessions' PATH, where agent-sudo is.
func startSSHD(t *testing.T, k *keys, port int, bin, approverSocket string) *sshd {
	t.Helper()
	name := fmt.Sprintf("sshd-%d", port)
	auth := filepath.Join(k.dir, name+".authorized_keys")
	lines := `restrict,command="agent-sudo approver-stdio" ` + read(t, k.client+".pub") +
		`restrict,port-forwarding ` + read(t, k.forward+".pub")
	write(t, auth, lines)
	conf := filepath.Join(k.dir, name+".conf")
	write(t, conf, fmt.Sprintf(`ListenAddress 127.0.0.1:%d
HostKey %s
PidFile none
AuthorizedKeysFile %s
# The test's directory is under /tmp, which others can write.
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowStreamLocalForwarding yes
SetEnv PATH=%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin AGENT_SUDO_APPROVER_SOCKET=%s
`, port, k.hostKey, auth, bin, approverSocket))
	// sshd needs its privilege separation directory; Debian's package
	// makes it at boot (tmpfiles), which a container may not have done.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	s := &sshd{port: port, logs: &daemontest.Buffer{}}
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", conf)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, s.logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if logs, err := s.logs.Wait(ctx, fmt.Sprintf("Server listening on 127.0.0.1 port %d.", port)); err != nil {
		t.Fatalf("sshd did not start listening: %v\n%s", err, logs)
	}
	// The host key, as the console's ssh will see it.
	pub := strings.Fields(read(t, k.hostKey+".pub"))
	f, err := os.OpenFile(k.knownHosts, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "[127.0.0.1]:%d %s %s\n", port, pub[0], pub[1]); err != nil {
		t.Fatal(err)
	}
	return s
}

// sshOptions are the options the console and the forwarding give ssh: the
// test's known hosts and identity, nothing from the machine's own files.
func sshOptions(k *keys, identity string) []string {
	return []string{"UserKnownHostsFile=" + k.knownHosts, "GlobalKnownHostsFile=/dev/null", "StrictHostKeyChecking=yes",
		"IdentityFile=" + identity, "IdentitiesOnly=yes", "ControlMaster=no", "ControlPath=none"}
}

// tempDir is a short temporary directory (Unix socket paths are limited
// to 107 bytes), removed when the test ends.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "asr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestConsoleOverSSH: one "agent-sudo approve" in tmux serves two daemons,
// "host-a" and "host-b", each behind its own sshd and reached with
// "ssh -T root@127.0.0.1 agent-sudo approver-stdio"; each ssh runs in a
// session of its own without the console's terminal. A request on each is
// approved where it came from, and the screen names the daemon by the
// host name the daemon sent; the console's notice and the daemon's audit
// log name the decider by its approver-stdio process, "console uid=0
// tty=pipe:[N] pid=N". A session grant made (s, then y) on a request from
// host-a is listed as host-a's, lets the same request on host-a run
// without asking, and not on host-b. When host-a's daemon stops, the console shows
// it RECONNECTING while host-b's requests are still approved; when it
// starts again the console reconnects by itself, says the daemon
// restarted, and approves its requests again.
func TestConsoleOverSSH(t *testing.T) {
	t.Parallel()
	_, cli := daemontest.Binaries(t)
	bin := filepath.Dir(cli)
	dir := tempDir(t)
	k := makeKeys(t, dir)
	cfg := daemontest.Config{ApprovalTimeout: "60s", Hostname: "host-a"}
	a := daemontest.Start(t, cfg)
	cfg.Hostname = "host-b"
	b := daemontest.Start(t, cfg)
	startSSHD(t, k, 2201, bin, a.ApproverSocket)
	startSSHD(t, k, 2202, bin, b.ApproverSocket)

	args := []string{cli, "approve", "--ssh", "ssh://root@127.0.0.1:2201", "--ssh", "ssh://root@127.0.0.1:2202"}
	for _, o := range sshOptions(k, k.client) {
		args = append(args, "--ssh-option", o)
	}
	t.Logf("the console: %s", strings.Join(args, " "))
	tm := tmuxtest.Start(t, tmuxtest.Config{Command: strings.Join(args, " ")})
	nameA, nameB := "host-a (ssh ssh://root@127.0.0.1:2201)", "host-b (ssh ssh://root@127.0.0.1:2202)"
	tm.WaitFor("● " + nameA + ": connected")
	tm.WaitFor("● " + nameB + ": connected")
	checkSSHSessions(t, tm, cli)

	approveOn := func(d *daemontest.Daemon, name, text string) {
		t.Helper()
		r := ask(t, d, text)
		screen := tm.WaitFor("command    echo '" + text + "'")
		if !strings.Contains(screen, "FROM agent-sudod on "+name) {
			t.Fatalf("the request to %s does not say where it is from:\n%s", name, screen)
		}
		t.Logf("the screen of a request to %s:\n%s", name, strings.TrimRight(screen, "\n"))
		consoletest.Press(t, tm, "a", "request "+r.ID+" was allowed by console uid=0 tty=pipe:[")
		if resp := r.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != text+"\n" {
			t.Fatalf("request to %s: status %q stdout %q message %q", name, resp.Status, resp.Stdout, resp.Message)
		}
		wantRemoteConsole(t, d, r.ID)
	}
	approveOn(a, nameA, "approved on host-a")
	approveOn(b, nameB, "approved on host-b")

	// Grants are per daemon. A session grant made on a request from
	// host-a (s, then y to confirm) is listed as host-a's; the same
	// request on host-a then runs without asking, while on host-b it is
	// still shown.
	const granted = "session grant on host-a"
	r := ask(t, a, granted)
	screen := tm.WaitFor("command    echo '" + granted + "'")
	if !strings.Contains(screen, "FROM agent-sudod on "+nameA) {
		t.Fatalf("the request to host-a does not say where it is from:\n%s", screen)
	}
	consoletest.Press(t, tm, "s", "Allow for this session?")
	consoletest.Press(t, tm, "y", "request "+r.ID+" was allowed by console uid=0 tty=pipe:[")
	if resp := r.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != granted+"\n" {
		t.Fatalf("the request granted for the session: status %q stdout %q message %q", resp.Status, resp.Stdout, resp.Message)
	}
	tm.WaitFor("1 session grant in force")
	screen = consoletest.Press(t, tm, "g", "held by "+nameA)
	if !strings.Contains(screen, "uid 0  session remote  expires ") || !strings.Contains(screen, "  on "+nameA) || strings.Contains(screen, "on "+nameB) || strings.Contains(screen, "held by "+nameB) {
		t.Fatalf("the grants list does not show the grant as host-a's only:\n%s", screen)
	}
	t.Logf("the grants list:\n%s", strings.TrimRight(screen, "\n"))
	consoletest.Press(t, tm, "g", "1 session grant in force")
	again := ask(t, a, granted)
	if resp := again.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != granted+"\n" {
		t.Fatalf("the same request on host-a did not run by the grant: status %q stdout %q message %q", resp.Status, resp.Stdout, resp.Message)
	}
	approveOn(b, nameB, granted)

	a.Stop()
	screen = tm.WaitFor("○ " + nameA + ": RECONNECTING")
	t.Logf("the screen while host-a is away:\n%s", strings.TrimRight(screen, "\n"))
	approveOn(b, nameB, "host-b while host-a is away")

	a.StartAgain()
	tm.WaitFor("reconnected to " + nameA + ": it restarted (a new instance)")
	tm.WaitFor("● " + nameA + ": connected")
	approveOn(a, nameA, "host-a after its restart")
}

// checkSSHSessions checks that each ssh the console (cli approve, in tm's
// pane) started runs in a session of its own, without a controlling
// terminal, while the console has the pane's terminal.
func checkSSHSessions(t *testing.T, tm *tmuxtest.Session, cli string) {
	t.Helper()
	var shell int
	if _, err := fmt.Sscan(tm.Run("display-message", "-p", "-t", tm.Name, "#{pane_pid}"), &shell); err != nil {
		t.Fatalf("the pane's pid: %v", err)
	}
	consoles := childrenRunning(t, shell, cli)
	if len(consoles) != 1 {
		t.Fatalf("the pane's shell (pid %d) has %d children running %s, want the console", shell, len(consoles), cli)
	}
	console := testenv.MustProcStat(t, consoles[0])
	if console.TTYNr() == 0 {
		t.Fatalf("the console (pid %d) has no controlling terminal in tmux: %+v", consoles[0], console)
	}
	sshs := childrenRunning(t, consoles[0], "/usr/bin/ssh")
	if len(sshs) != 2 {
		t.Fatalf("the console (pid %d) runs %d ssh processes, want 2", consoles[0], len(sshs))
	}
	for _, pid := range sshs {
		st := testenv.MustProcStat(t, pid)
		if st.Session() == console.Session() || st.Session() != pid || st.TTYNr() != 0 {
			t.Errorf("ssh (pid %d) runs in session %d with terminal %d; want a session of its own (%d), not the console's (%d), and no terminal",
				pid, st.Session(), st.TTYNr(), pid, console.Session())
		}
	}
	if !t.Failed() {
		t.Logf("the console (pid %d, session %d, terminal %d) runs ssh as pids %v, each in a session of its own without a terminal",
			consoles[0], console.Session(), console.TTYNr(), sshs)
	}
}

// childrenRunning lists parent's children whose executable is exe.
func childrenRunning(t *testing.T, parent int, exe string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || fmt.Sprint(pid) != e.Name() {
			continue
		}
		st, err := testenv.ReadProcStat(pid)
		if err != nil || st.PPID() != parent {
			continue // gone, or another's child
		}
		if path, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && path == exe {
			pids = append(pids, pid)
		}
	}
	return pids
}

// remoteConsole is how the daemon names a console that reached it through
// ssh: by its approver-stdio process, whose stdin is a pipe from sshd.
var remoteConsole = regexp.MustCompile(`^console uid=0 tty=pipe:\[[0-9]+\] pid=[0-9]+`)

// wantRemoteConsole checks that d's audit log records the decision on
// request id as made by a console over ssh (remoteConsole).
func wantRemoteConsole(t *testing.T, d *daemontest.Daemon, id string) {
	t.Helper()
	for _, rec := range d.AuditRecords(id) {
		if rec.Decision == nil {
			continue
		}
		if !remoteConsole.MatchString(rec.Decision.By) {
			t.Fatalf("the audit log says request %s was decided by %q, want %s", id, rec.Decision.By, remoteConsole)
		}
		return
	}
	t.Fatalf("the audit log has no decision on request %s: %+v", id, d.AuditRecords(id))
}

// TestAgentOverSSHForwarding: an agent on "host B" reaches the daemon on
// this host through OpenSSH stream-local forwarding, set up from this host
// with "ssh -R B_SOCKET:DAEMON_SOCKET root@B": the agent's client points at
// B_SOCKET. The approver sees the truth about the peer: the kernel names
// the ssh process that holds the forwarding (exe /usr/bin/ssh, its uid),
// not the agent, and the host the agent claims (B's host name, sent by the
// client) is shown as the agent's claim.
func TestAgentOverSSHForwarding(t *testing.T) {
	t.Parallel()
	_, cli := daemontest.Binaries(t)
	dir := tempDir(t)
	k := makeKeys(t, dir)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s", Hostname: "host-a"})
	startSSHD(t, k, 2203, filepath.Dir(cli), d.ApproverSocket)
	console := daemontest.Dial(t, d.ApproverSocket)
	if console.Hello.DaemonHost != "host-a" {
		t.Fatalf("the daemon says it is on %q, want host-a", console.Hello.DaemonHost)
	}

	// On "host B", the forwarded socket; the ssh client on this host
	// connects what arrives there to the daemon's agent socket.
	forwarded := filepath.Join(dir, "agent-sudo.sock")
	args := []string{"-v", "-N", "-T", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes"}
	for _, o := range sshOptions(k, k.forward) {
		args = append(args, "-o", o)
	}
	args = append(args, "-R", forwarded+":"+d.Socket, "ssh://root@127.0.0.1:2203")
	t.Logf("the forwarding: ssh %s", strings.Join(args, " "))
	fwd := exec.Command("ssh", args...)
	logs := &daemontest.Buffer{}
	fwd.Stdout, fwd.Stderr = logs, logs
	if err := fwd.Start(); err != nil {
		t.Fatal(err)
	}
	fwdDone := make(chan struct{})
	go func() { _ = fwd.Wait(); close(fwdDone) }()
	t.Cleanup(func() {
		_ = fwd.Process.Kill()
		<-fwdDone
		if t.Failed() {
			t.Logf("ssh -R's log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := logs.Wait(ctx, "remote forward success for: listen "+forwarded); err != nil {
		t.Fatalf("the forwarding was not set up: %v\n%s", err, out)
	}

	// sshd made the forwarded socket for its user only (StreamLocalBindMask).
	if fi, err := os.Stat(forwarded); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("the forwarded socket: %v, %v; want a socket of mode 0600", fi.Mode(), err)
	}

	// The agent on "host B": agent-sudo run in a UTS namespace whose host
	// name is agent-box, pointed at the forwarded socket.
	agent := exec.Command("unshare", "--uts", "--", "/bin/sh", "-c", `hostname agent-box && exec "$@"`, "agent",
		cli, "run", "--socket", forwarded, "--reason", "from host B", "--", "echo", "via ssh -R")
	agent.Env = append(os.Environ(), "AGENT_SUDO_SESSION=remote-agent")
	var agentOut, agentErr bytes.Buffer
	agent.Stdout, agent.Stderr = &agentOut, &agentErr
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	agentDone := make(chan error, 1)
	go func() { agentDone <- agent.Wait() }()

	p := console.NextOf(approval.MsgPending)
	s := p.Request
	if s.Host != "agent-box" || s.Peer.Exe != "/usr/bin/ssh" || s.Peer.UID != 0 || s.Session != "remote-agent" {
		t.Fatalf("the approver sees host %q, peer %+v, session %q; want the claimed host agent-box and the ssh process holding the forwarding",
			s.Host, s.Peer, s.Session)
	}
	if want := fmt.Sprint(fwd.Process.Pid); fmt.Sprint(s.Peer.PID) != want {
		t.Errorf("the peer is pid %d, want the ssh -R process, pid %s", s.Peer.PID, want)
	}
	// The ancestry starts at the ssh process (its parents are the test's,
	// on host A), and the claimed host is set beside the daemon's own.
	if a := s.Peer.Ancestry; a == nil || len(a.Hops) == 0 || a.Hops[0].PID != int32(fwd.Process.Pid) || a.Hops[0].Exe != "/usr/bin/ssh" {
		t.Errorf("the ancestry the approver sees does not start at the ssh -R process (pid %d): %+v", fwd.Process.Pid, a)
	}
	if s.DaemonHost == "" || s.DaemonHost == s.Host {
		t.Errorf("the daemon's own host %q is not set beside the claimed %q, so the console cannot mark the claim", s.DaemonHost, s.Host)
	}
	t.Logf("the approver sees: host %q (the agent's claim), peer uid %d pid %d exe %s", s.Host, s.Peer.UID, s.Peer.PID, s.Peer.Exe)
	console.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	if r := console.Result(p.ID); !r.OK {
		t.Fatalf("decision refused: %+v", r)
	}
	select {
	case err := <-agentDone:
		if err != nil || agentOut.String() != "via ssh -R\n" {
			t.Fatalf("the agent's run: %v\nstdout %q\nstderr %q", err, agentOut.String(), agentErr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the agent got no answer within 60s; stderr %q", agentErr.String())
	}
}

// ask asks d to run "echo text", as an agent on d's host would.
func ask(t *testing.T, d *daemontest.Daemon, text string) *daemontest.Asked {
	t.Helper()
	return d.Ask(t, &proto.Request{ID: fmt.Sprintf("remote-%d", time.Now().UnixNano()), Pipeline: [][]string{{"echo", text}},
		Privileged: true, Session: "remote", Host: "agent-claims-this", Time: time.Now()})
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
