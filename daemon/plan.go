package daemon

import (
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/daemon/config"
	"github.com/agent-sudo/agent-sudo/daemon/peercred"
	"github.com/agent-sudo/agent-sudo/daemon/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// plan is a request turned into exactly what would run: programs resolved
// once, the target user, the environment and directory. Rules, the approver
// and the runner all see this one plan, so what is approved is what runs.
type plan struct {
	req  *proto.Request
	peer peercred.Creds
	// stages holds each stage's resolved program and its argv as given.
	stages []runner.Command
	// programs holds each stage's program for display: the resolved path
	// and, when it differs, the real file behind symlinks.
	programs []string
	target   runner.Target
	env      []string
	dir      string
	// received is when the request was read.
	received time.Time
}

// plan checks everything about a request that does not need a human, so
// that a request that could not run is refused before anyone is asked.
func (s *Server) plan(req *proto.Request, peer peercred.Creds) (*plan, error) {
	p := &plan{req: req, peer: peer, dir: "/", received: s.now()}
	for i, stage := range req.Pipeline {
		r, err := runner.Resolve(stage[0], s.cfg.SecurePath)
		if err != nil {
			return nil, fmt.Errorf("pipeline[%d]: %w", i, err)
		}
		// A path that is not UTF-8 cannot be shown to the approver exactly
		// (nor bound into the decision's hash), so it is not run.
		if !utf8.ValidString(r.Path) || !utf8.ValidString(r.Link) {
			return nil, fmt.Errorf("pipeline[%d]: the program resolves to %q, which is not valid UTF-8; refusing a path that cannot be shown exactly", i, r.Path)
		}
		p.stages = append(p.stages, runner.Command{Path: r.Path, Link: r.Link, Args: stage})
		shown := r.Link
		if r.Link != r.Path {
			shown += " -> " + r.Path
		}
		p.programs = append(p.programs, shown)
	}
	if req.Cwd != "" {
		fi, err := os.Stat(req.Cwd)
		if err != nil {
			return nil, fmt.Errorf("cwd %q: %w", req.Cwd, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("cwd %q is not a directory", req.Cwd)
		}
		p.dir = req.Cwd
	}
	var err error
	switch {
	case req.Privileged:
		p.target, err = runner.LookupTarget("root")
	case s.cfg.UnprivilegedUser != "":
		p.target, err = runner.LookupTarget(s.cfg.UnprivilegedUser)
	default:
		p.target, err = runner.LookupTarget(peer.User())
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
	p.env, err = s.env.BuildEnv(p.target, req.Env, sock)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// spec is the runner's view of the plan.
func (p *plan) spec(cfg *config.Config) runner.Spec {
	return runner.Spec{
		Stages: p.stages, Env: p.env, Dir: p.dir,
		Mode: runner.Mode(cfg.Exec), SudoPath: cfg.SudoPath, Target: p.target,
		Timeout: cfg.CommandTimeout, KillGrace: cfg.KillGrace, MaxOutput: proto.MaxOutputBytes,
		Stdin: p.req.Stdin, // the bytes approval.Shown.Stdin carried, and its hash bound
	}
}

// display renders the pipeline for logs, stages separated by " | ".
func (p *plan) display() string {
	stages := make([]string, len(p.stages))
	for i, c := range p.stages {
		stages[i] = strings.Join(append([]string{c.Link}, c.Args[1:]...), " ")
	}
	return strings.Join(stages, " | ")
}
