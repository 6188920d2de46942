package daemon_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// execFixture is a root-only directory (under /run, whose ancestors only
// root can write) holding a directory owned by a real unprivileged user, as
// an agent's home would be.
type execFixture struct {
	root  string // root-owned, 0755
	agent string // owned by the agent user, 0755
	user  *daemontest.User
}

func newExecFixture(t *testing.T) *execFixture {
	t.Helper()
	daemontest.RequireRoot(t)
	root, err := os.MkdirTemp("/run", "asudo-exec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	u := daemontest.AddUser(t, "exec")
	agent := filepath.Join(root, "agent")
	if err := os.Mkdir(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(agent, int(u.UID), int(u.GID)); err != nil {
		t.Fatal(err)
	}
	return &execFixture{root: root, agent: agent, user: u}
}

// asAgent runs sh -c script as the agent user and fails the test if it fails.
func (f *execFixture) asAgent(t *testing.T, script string) {
	t.Helper()
	if out, err := f.user.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("as the agent: %s: %v\n%s", script, err, out)
	}
}

// TestE2EReplacedProgramRunsApprovedFile: an agent-owned program replaced
// between the request and the decision (rename over it, as an editor or an
// attacker would) does not run; the file the human was shown does (issue 9).
func TestE2EReplacedProgramRunsApprovedFile(t *testing.T) {
	t.Parallel()
	f := newExecFixture(t)
	tool := filepath.Join(f.agent, "tool")
	f.asAgent(t, "printf '#!/bin/sh\\necho approved\\n' > "+tool+" && chmod 755 "+tool)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "20s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	done := d.Ask(t, &proto.Request{ID: "swap-1", Pipeline: [][]string{{tool}}, Privileged: true}).Done
	p := c.Pending("swap-1")
	prog := p.Request.Programs[0]
	if !slices.Equal(prog.Chain, []string{tool}) || len(prog.SHA256) != 64 || prog.Ino == 0 {
		t.Fatalf("program shown: %+v", prog)
	}
	if len(prog.Writable) == 0 || prog.Writable[0].Path != f.agent || !strings.Contains(prog.Writable[0].Why, "owned by uid") {
		t.Fatalf("no warning that %s is writable by the agent: %+v", f.agent, prog.Writable)
	}
	f.asAgent(t, "printf '#!/bin/sh\\necho swapped\\n' > "+tool+".new && chmod 755 "+tool+".new && mv "+tool+".new "+tool)
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	if r := c.Result(p.ID); !r.OK {
		t.Fatalf("decision refused: %+v", r)
	}
	resp := <-done
	if resp.Status != proto.StatusOK || string(resp.Stdout) != "approved\n" {
		t.Fatalf("response %+v, stdout %q: want the approved file's output", resp, resp.Stdout)
	}
}

// TestE2ERewrittenProgramRefused: an agent-owned program rewritten in place
// (same inode) after the request does not run (issue 9, issue 10 M3).
func TestE2ERewrittenProgramRefused(t *testing.T) {
	t.Parallel()
	f := newExecFixture(t)
	tool := filepath.Join(f.agent, "tool")
	f.asAgent(t, "printf '#!/bin/sh\\necho approved\\n' > "+tool+" && chmod 755 "+tool)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "20s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	done := d.Ask(t, &proto.Request{ID: "rewrite-1", Pipeline: [][]string{{tool}}, Privileged: true}).Done
	p := c.Pending("rewrite-1")
	f.asAgent(t, "printf '#!/bin/sh\\necho rewritten\\n' > "+tool)
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	if r := c.Result(p.ID); !r.OK {
		t.Fatalf("decision refused: %+v", r)
	}
	resp := <-done
	if resp.Status != proto.StatusError || !strings.Contains(resp.Message, "content changed") || len(resp.Stdout) > 0 {
		t.Fatalf("response %+v, stdout %q: want an error saying the content changed", resp, resp.Stdout)
	}
}

// TestE2ESudoModeRefusesReplaceableProgram: sudo opens the program again by
// path, so in sudo mode a program someone other than root can replace is
// refused before anyone is asked (issue 9).
func TestE2ESudoModeRefusesReplaceableProgram(t *testing.T) {
	t.Parallel()
	f := newExecFixture(t)
	tool := filepath.Join(f.agent, "tool")
	f.asAgent(t, "printf '#!/bin/sh\\necho ran\\n' > "+tool+" && chmod 755 "+tool)
	d := daemontest.Start(t, daemontest.Config{Exec: "sudo", Rules: daemontest.AllowAll})
	resp := d.Run(&proto.Request{ID: "sudo-swap", Pipeline: [][]string{{tool}}, Privileged: true})
	if resp.Status != proto.StatusError || !contains(resp.Message, "nobody but root can replace", f.agent, "owned by uid") {
		t.Fatalf("response %+v, want a refusal naming %s", resp, f.agent)
	}
	// A program only root can replace still runs in sudo mode.
	if resp := d.Run(&proto.Request{ID: "sudo-ok", Pipeline: [][]string{{"echo", "fine"}}, Privileged: true}); resp.Status != proto.StatusOK || string(resp.Stdout) != "fine\n" {
		t.Fatalf("root-only program in sudo mode: %+v", resp)
	}
}

// TestE2EForgedChainShownAsList: a directory named "d -> " makes the path
// X/d -> /usr/bin/apt-get; reached through the symlink X/apt-get it used to
// show as X/apt-get -> X/d -> /usr/bin/apt-get. The chain is a list of
// exactly two hops, quoted each on its own in audit show, with a warning,
// and no session grant is given for it (issue 10 H1, M3).
func TestE2EForgedChainShownAsList(t *testing.T) {
	t.Parallel()
	f := newExecFixture(t)
	link := filepath.Join(f.agent, "apt-get")
	forged := filepath.Join(f.agent, "d -> /usr/bin/apt-get")
	f.asAgent(t, "mkdir -p '"+filepath.Dir(forged)+"' && printf '#!/bin/sh\\necho agent-code\\n' > '"+forged+"' && chmod 755 '"+forged+"' && ln -s 'd -> /usr/bin/apt-get' "+link)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "20s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	done := d.Ask(t, &proto.Request{ID: "forge-1", Pipeline: [][]string{{link, "update"}}, Privileged: true, Session: "s"}).Done
	p := c.Pending("forge-1")
	prog := p.Request.Programs[0]
	if !slices.Equal(prog.Chain, []string{link, forged}) {
		t.Fatalf("chain %q, want exactly [%q %q]", prog.Chain, link, forged)
	}
	if len(prog.Writable) == 0 {
		t.Fatalf("no writable warning for %s", f.agent)
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowSession})
	if r := c.Result(p.ID); r.OK || !strings.Contains(r.Error, "allow for this session refused") {
		t.Fatalf("allow_session for an agent-writable program: %+v", r)
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	if r := c.Result(p.ID); !r.OK {
		t.Fatalf("allow once refused: %+v", r)
	}
	if resp := <-done; resp.Status != proto.StatusOK || string(resp.Stdout) != "agent-code\n" {
		t.Fatalf("response %+v", resp)
	}
	code, out, errOut := auditCLI("audit", "--log", d.AuditLog, "show", "forge-1")
	if code != 0 {
		t.Fatalf("audit show: %d %s", code, errOut)
	}
	want := "'" + link + "' -> '" + forged + "'"
	if !strings.Contains(out, want) && !strings.Contains(out, link+" -> '"+forged+"'") {
		t.Errorf("audit show does not show the chain as two quoted hops (%s):\n%s", want, out)
	}
	if !strings.Contains(out, "WARNING") || !strings.Contains(out, "not root-only") {
		t.Errorf("audit show has no warning for the agent-writable directory:\n%s", out)
	}
}

// TestE2EGrantBindsFileContent: a session grant covers the file with the
// content that was approved; the same path with other content asks again
// (issue 10 M3).
func TestE2EGrantBindsFileContent(t *testing.T) {
	t.Parallel()
	f := newExecFixture(t)
	tool := filepath.Join(f.root, "tool") // root-only: grants are possible
	testenv.WriteExecutable(t, tool, []byte("#!/bin/sh\necho v1\n"))
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "20s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	req := func(id string) *proto.Request {
		return &proto.Request{ID: id, Pipeline: [][]string{{tool}}, Privileged: true, Session: "grant-s"}
	}
	done := d.Ask(t, req("g-1")).Done
	p := c.Pending("g-1")
	if len(p.Request.Programs[0].Writable) != 0 {
		t.Fatalf("root-only program reported writable: %+v", p.Request.Programs[0].Writable)
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowSession})
	if r := c.Result(p.ID); !r.OK {
		t.Fatalf("allow_session refused: %+v", r)
	}
	if resp := <-done; resp.Status != proto.StatusOK || string(resp.Stdout) != "v1\n" {
		t.Fatalf("first run: %+v", resp)
	}
	if resp := d.Run(req("g-2")); resp.Status != proto.StatusOK || string(resp.Stdout) != "v1\n" {
		t.Fatalf("same file under the grant: %+v", resp)
	}
	// Same path, same inode, other content.
	testenv.WriteExecutable(t, tool, []byte("#!/bin/sh\necho v2\n"))
	done = d.Ask(t, req("g-3")).Done
	p = c.Pending("g-3") // asked again: the grant does not cover it
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
	if resp := <-done; resp.Status != proto.StatusDenied {
		t.Fatalf("changed file: %+v, want it asked and denied", resp)
	}
}

// TestE2ECwdResolvedAndBound: a cwd that is a symlink is shown resolved with
// its chain, and the command runs in the directory that was shown even if
// the link is repointed before the decision (issue 10 M1).
func TestE2ECwdResolvedAndBound(t *testing.T) {
	t.Parallel()
	f := newExecFixture(t)
	secret := filepath.Join(f.root, "secret")
	if err := os.Mkdir(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(f.agent, "proj")
	f.asAgent(t, "ln -s "+secret+" "+proj+" && mkdir "+f.agent+"/other")
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "20s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	done := d.Ask(t, &proto.Request{ID: "cwd-1", Pipeline: [][]string{{"pwd", "-P"}}, Privileged: true, Cwd: proj}).Done
	p := c.Pending("cwd-1")
	if p.Request.Cwd != secret || !slices.Equal(p.Request.CwdChain, []string{proj, secret}) {
		t.Fatalf("cwd shown as %q (chain %q), want %q reached from %q", p.Request.Cwd, p.Request.CwdChain, secret, proj)
	}
	if len(p.Request.CwdWritable) != 0 {
		t.Fatalf("root-only cwd reported writable: %+v", p.Request.CwdWritable)
	}
	f.asAgent(t, "rm "+proj+" && ln -s "+f.agent+"/other "+proj)
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	if r := c.Result(p.ID); !r.OK {
		t.Fatalf("decision refused: %+v", r)
	}
	if resp := <-done; resp.Status != proto.StatusOK || string(resp.Stdout) != secret+"\n" {
		t.Fatalf("response %+v, stdout %q: want it run in %s", resp, resp.Stdout, secret)
	}

	// A directory the agent can write is flagged.
	done = d.Ask(t, &proto.Request{ID: "cwd-2", Pipeline: [][]string{{"true"}}, Privileged: true, Cwd: f.agent}).Done
	p = c.Pending("cwd-2")
	if len(p.Request.CwdWritable) == 0 || p.Request.CwdWritable[0].Path != f.agent {
		t.Fatalf("no warning for a cwd the agent owns: %+v", p.Request)
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
	<-done
}

// TestE2EChildFDs: in each exec mode, a command sees only its stdin, stdout
// and stderr (issue 10 L3), also when it has a working directory (entered
// through a descriptor).
func TestE2EChildFDs(t *testing.T) {
	t.Parallel()
	var nums []string
	for n := range 64 {
		nums = append(nums, strconv.Itoa(n))
	}
	script := "for n in " + strings.Join(nums, " ") + "; do [ -e /proc/$$/fd/$n ] && printf '%s ' $n; done; true"
	for _, mode := range []string{"direct", "sudo"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			d := daemontest.Start(t, daemontest.Config{Exec: mode, Rules: daemontest.AllowAll})
			resp := d.Run(&proto.Request{ID: "fds-" + mode, Pipeline: [][]string{{"bash", "-c", script}}, Privileged: true, Cwd: "/etc"})
			if resp.Status != proto.StatusOK || string(resp.Stdout) != "0 1 2 " {
				t.Fatalf("response %+v, stdout %q: want only fds 0 1 2", resp, resp.Stdout)
			}
		})
	}
}
