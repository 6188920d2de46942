package daemon

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// plan is a request turned into exactly what would run: programs resolved
// once, the target user, the environment and directory. Rules, the approver
// and the runner all see this one plan, so what is approved is what runs.
type plan struct {
	// pol is the policy the request is decided and run under.
	pol  *policy
	req  *proto.Request
	peer peercred.Creds
	// stages holds each stage's resolved program and its argv as given.
	stages []runner.Command
	// programs holds each stage's program for display and binding: the
	// symlink chain as a list, the opened file's identity and hash, and
	// what someone other than root could change.
	programs []approval.Program
	target   runner.Target
	env      []string
	// dir is the resolved working directory, dirChain its symlink chain
	// (nil without symlinks), dirWritable who else can write it, and
	// dirFile the directory opened at plan time, which the stages enter.
	dir          string
	dirChain     []string
	dirWritable  []approval.Writable
	dirFile      *runner.File
	dirUntrusted []runner.Writable
	// sudo is the daemon's sudo in sudo mode, nil in direct mode.
	sudo *runner.Sudo
	// received is when the request was read.
	received time.Time
}

// plan checks everything about a request that does not need a human, so
// that a request that could not run is refused before anyone is asked.
func (s *Server) plan(pol *policy, req *proto.Request, peer peercred.Creds) (_ *plan, err error) {
	p := &plan{pol: pol, req: req, peer: peer, dir: "/", sudo: s.sudo, received: s.now()}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	for i, stage := range req.Pipeline {
		r, err := runner.Resolve(stage[0], pol.cfg.SecurePath)
		if err != nil {
			return nil, fmt.Errorf("pipeline[%d]: %w", i, err)
		}
		// A path that is not UTF-8 cannot be shown to the approver exactly
		// (nor bound into the decision's hash), so it is not run.
		for _, hop := range r.Chain {
			if !utf8.ValidString(hop) {
				return nil, fmt.Errorf("pipeline[%d]: the program resolves through %q, which is not valid UTF-8; refusing a path that cannot be shown exactly", i, hop)
			}
		}
		// sudo opens the program again by path, so in sudo mode only a
		// program that nobody but root can replace is run.
		if pol.cfg.Exec == runner.ModeSudo && len(r.Untrusted) > 0 {
			w := r.Untrusted[0]
			return nil, fmt.Errorf("pipeline[%d]: exec = \"sudo\" runs only programs that nobody but root can replace, and %q can be changed by others (%s: %s); install the program in a root-owned directory", i, stage[0], w.Path, w.Why)
		}
		f, err := s.hashes.OpenProgram(r)
		if err != nil {
			return nil, fmt.Errorf("pipeline[%d]: %w", i, err)
		}
		p.stages = append(p.stages, runner.Command{Path: r.Path, Link: r.Link, Args: stage, Program: f,
			Chain: r.Chain, Untrusted: r.Untrusted})
		p.programs = append(p.programs, approval.Program{
			Chain: r.Chain, Dev: f.Dev, Ino: f.Ino, SHA256: hex.EncodeToString(f.SHA256[:]),
			Writable: writables(r.Untrusted),
		})
	}
	if req.Cwd != "" {
		d, err := runner.ResolveDir(req.Cwd)
		if err != nil {
			return nil, fmt.Errorf("cwd %q: %w", req.Cwd, err)
		}
		if !utf8.ValidString(d.Path) {
			return nil, fmt.Errorf("cwd %q resolves to %q, which is not valid UTF-8; refusing a path that cannot be shown exactly", req.Cwd, d.Path)
		}
		p.dirFile, err = runner.OpenDir(req.Cwd, d.Path)
		if err != nil {
			return nil, fmt.Errorf("cwd %q: %w", req.Cwd, err)
		}
		p.dir = d.Path
		if len(d.Chain) > 1 {
			p.dirChain = d.Chain
		}
		p.dirWritable = writables(d.Untrusted)
		p.dirUntrusted = d.Untrusted
	}
	switch {
	case req.Privileged:
		p.target, err = s.targets.Lookup("root")
	case pol.cfg.UnprivilegedUser != "":
		p.target, err = s.targets.Lookup(pol.cfg.UnprivilegedUser)
	default:
		p.target, err = s.targets.Lookup(peer.User())
	}
	if err != nil {
		return nil, fmt.Errorf("target user: %w", err)
	}
	sock := ""
	if req.ForwardAgent {
		if s.sshAuthSock == "" {
			return nil, fmt.Errorf("forward_agent: the daemon has no SSH agent to forward (SSH_AUTH_SOCK was not set when it started)")
		}
		sock = s.sshAuthSock
	}
	p.env, err = pol.env.BuildEnv(p.target, req.Env, sock)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// spec is the runner's view of the plan.
func (p *plan) spec() runner.Spec {
	cfg := p.pol.cfg
	return runner.Spec{
		Stages: p.stages, Env: p.env, Dir: p.dir, DirFile: p.dirFile,
		DirChain: p.dirChain, DirUntrusted: p.dirUntrusted,
		Mode: cfg.Exec, SudoPath: cfg.SudoPath, Sudo: p.sudo, Target: p.target,
		Timeout: cfg.CommandTimeout.Duration, KillGrace: cfg.KillGrace.Duration, MaxOutput: proto.MaxOutputBytes,
		Stdin: p.req.Stdin, // the bytes approval.Shown.Stdin carried, and its hash bound
	}
}

// close closes the files the plan opened; p may be nil.
func (p *plan) close() {
	if p == nil {
		return
	}
	for _, c := range p.stages {
		_ = c.Program.Close()
	}
	_ = p.dirFile.Close()
}

func writables(ws []runner.Writable) []approval.Writable {
	var out []approval.Writable
	for _, w := range ws {
		out = append(out, approval.Writable{Path: w.Path, Why: w.Why})
	}
	return out
}

// display renders the pipeline for logs, stages separated by " | ".
func (p *plan) display() string {
	stages := make([]string, len(p.stages))
	for i, c := range p.stages {
		stages[i] = strings.Join(append([]string{c.Link}, c.Args[1:]...), " ")
	}
	return strings.Join(stages, " | ")
}
