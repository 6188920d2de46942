package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
	"golang.org/x/sys/unix"
)

// BenchmarkPhases breaks one direct-mode round trip of an allowed `true`
// into its steps, each timed alone with the daemon's own code, in the order
// the daemon runs them. docs/performance.md has the table and the command:
//
//	go test -run '^$' -bench Phases -benchtime 300x ./daemon/
//
// The audit steps write to a log in the package's temporary directory (the
// same disk as the daemon's default /var/log on this machine); the runner
// steps need root (direct mode changes credentials) and run in a cgroup of
// their own when the system has them, as the daemon does.
func BenchmarkPhases(b *testing.B) {
	testenv.NeedsRoot(b)
	dir := b.TempDir()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
socket = %q
approver_socket = %q
audit_log = %q
exec = "direct"
cgroup = "best-effort"
allowed_users = ["0"]
[[rule]]
name = "allow everything"
action = "allow"
match = ["*", "**"]
env = ["*"]
`, filepath.Join(dir, "s"), filepath.Join(dir, "a"), filepath.Join(dir, "audit.jsonl"))))
	if err != nil {
		b.Fatal(err)
	}
	alog, err := audit.Open(cfg.AuditLog, audit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer alog.Close()
	s, err := New(cfg, Options{Audit: alog})
	if err != nil {
		b.Fatal(err)
	}
	pol := s.policy()
	ctx := context.Background()

	// A real connection, for the peer's credentials and the connect step.
	sock := filepath.Join(dir, "bench.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *net.UnixConn, 1)
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() (net.Conn, *net.UnixConn) {
		c, err := net.Dial("unix", sock)
		if err != nil {
			b.Fatal(err)
		}
		return c, <-accepted
	}
	cc, sc := dial()
	peer, err := peercred.Get(sc)
	if err != nil {
		b.Fatal(err)
	}
	cc.Close()
	sc.Close()

	req := &proto.Request{ID: "0e8a9a57-4d59-4c4b-9a4e-1f0c3f8b9d21", Pipeline: [][]string{{"true"}}, Privileged: true, Time: time.Now()}
	line, err := req.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	decode := func() *proto.Request {
		r, err := proto.DecodeRequest(line, proto.DecodeOptions{Now: time.Now, MaxClockSkew: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	p, err := s.plan(pol, decode(), peer)
	if err != nil {
		b.Fatal(err)
	}
	defer p.close()
	spec := p.spec()
	spec.Cgroups = s.cgroups
	res, err := runner.Run(ctx, spec)
	if err != nil {
		b.Fatal(err)
	}
	resp := response(req.ID, res)
	res.Release()
	var wire bytes.Buffer
	if err := proto.WriteResponse(&wire, resp); err != nil {
		b.Fatal(err)
	}
	b.Logf("cgroups: %v", s.cgroups != nil)

	b.Run("connect", func(b *testing.B) {
		for b.Loop() {
			c, sc := dial()
			c.Close()
			sc.Close()
		}
	})
	b.Run("peercred", func(b *testing.B) {
		c, sc := dial()
		defer c.Close()
		defer sc.Close()
		for b.Loop() {
			if _, err := peercred.Get(sc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pin-peer", func(b *testing.B) {
		// The peer pinned at accept: pidfd, start time, exe.
		for b.Loop() {
			procinfo.PinPeer(sc, peer.PID).Close()
		}
	})
	b.Run("describe-peer", func(b *testing.B) {
		// The peer's ancestry and container identity from /proc, for the
		// console and the audit record (the peer is this process), and
		// the comparison with its pin.
		walks := make(chan struct{}, maxWalks)
		pin := procinfo.PinPeer(sc, peer.PID)
		defer pin.Close()
		for b.Loop() {
			p := peer
			describePeer(ctx, s.proc, &p, pin, walks)
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			decode()
		}
	})
	b.Run("plan", func(b *testing.B) {
		r := decode()
		for b.Loop() {
			p, err := s.plan(pol, r, peer)
			if err != nil {
				b.Fatal(err)
			}
			p.close()
		}
	})
	b.Run("plan/resolve", func(b *testing.B) {
		for b.Loop() {
			if _, err := runner.Resolve("true", pol.cfg.SecurePath); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plan/open-and-hash-program", func(b *testing.B) {
		r, err := runner.Resolve("true", pol.cfg.SecurePath)
		if err != nil {
			b.Fatal(err)
		}
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			f, err := runner.OpenProgram(r)
			if err != nil {
				b.Fatal(err)
			}
			_ = f.Close()
		}
	})
	b.Run("plan/open-and-hash-program-cached", func(b *testing.B) {
		// The daemon's HashCache: /usr/bin/true is root-only and settled.
		r, err := runner.Resolve("true", pol.cfg.SecurePath)
		if err != nil {
			b.Fatal(err)
		}
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			f, err := s.hashes.OpenProgram(r)
			if err != nil {
				b.Fatal(err)
			}
			_ = f.Close()
		}
	})
	b.Run("plan/lookup-user", func(b *testing.B) {
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			if _, err := runner.LookupTarget("root"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plan/lookup-user-cached", func(b *testing.B) {
		// The daemon's TargetCache; the same as lookup-user in a build
		// with cgo, where there is none.
		defer reportCPU(b, processCPU(b))
		for b.Loop() {
			if _, err := s.targets.Lookup("root"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rules", func(b *testing.B) {
		// decide with a rule that allows: no approver, no connection.
		for b.Loop() {
			if d := s.decide(ctx, nil, p, ""); d.Verdict != approval.Allow {
				b.Fatal(d)
			}
		}
	})
	b.Run("audit/request", func(b *testing.B) {
		for b.Loop() {
			if _, err := alog.Received(ctx, p.req, peer); err != nil {
				b.Fatal(err)
			}
		}
	})
	trail, err := alog.Received(ctx, p.req, peer)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("audit/decision", func(b *testing.B) {
		for b.Loop() {
			if err := trail.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: "allow everything"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("audit/exec", func(b *testing.B) {
		for b.Loop() {
			if err := trail.Started(ctx, spec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("run", func(b *testing.B) {
		// fork/exec, wait, process group or cgroup check and removal.
		for b.Loop() {
			res, err := runner.Run(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			res.Release()
		}
	})
	b.Run("run/bare-fork-exec-wait", func(b *testing.B) {
		// The baseline: a Go program's own fork/exec/wait of /bin/true.
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("audit/result", func(b *testing.B) {
		for b.Loop() {
			if err := trail.Finished(ctx, resp, res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if err := proto.WriteResponse(io.Discard, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("client-decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := proto.ReadResponse(bytes.NewReader(wire.Bytes())); err != nil {
				b.Fatal(err)
			}
		}
	})
	_ = os.Remove(sock)
}

// reportCPU reports the process's CPU time since cpu0 per iteration as
// cpu-ns/op: what a step costs however long the machine's load makes it
// wait. Deferred by a benchmark, it counts its loop.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the test process's user and system time so far.
func processCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
