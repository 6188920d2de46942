package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// The daemon's side: one Log for the process, and for each request the
// calls below, in this order. Every error means "audit log unavailable":
// the command must not run.
func Example() {
	dir, _ := os.MkdirTemp("", "audit-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	// At startup (cfg.AuditLog, cfg.AuditEnvValues); a failure stops the
	// daemon. Reopen on SIGHUP, Close at shutdown.
	log, err := audit.Open(filepath.Join(dir, "log", "audit.jsonl"), audit.Options{
		EnvValues: false,
		Journal:   audit.SystemJournal(), // nil when journald is not running
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer log.Close()

	peer := peercred.Creds{UID: 1000, PID: 4242, Exe: "/usr/bin/agent"}
	req := &proto.Request{ID: "r1", Session: "s1", Host: "h1", Time: time.Now(), Privileged: true,
		Pipeline: [][]string{{"true"}}}

	// A request refused before anyone is asked (bad request, replay,
	// unauthorised peer, plan error) gets one record.
	if err := log.Refused(ctx, audit.Refusal{ID: "r0", Peer: &peer, Reason: "invalid JSON"}); err != nil {
		fmt.Println("answer: audit log unavailable")
	}

	// An accepted request: after plan, before decide.
	tr, err := log.Received(ctx, req, peer)
	if err != nil {
		fmt.Println("answer: audit log unavailable")
		return
	}
	d := approval.Decision{Verdict: approval.Allow, By: "rule name"}
	if err := tr.Decided(ctx, d); err != nil {
		fmt.Println("answer: audit log unavailable")
		return
	}
	spec := runner.Spec{Stages: []runner.Command{{Path: "/usr/bin/true", Args: []string{"true"}}},
		Mode: runner.ModeDirect, Timeout: time.Minute, MaxOutput: proto.MaxOutputBytes}
	if err := tr.Started(ctx, spec); err != nil { // durable before runner.Run
		fmt.Println("answer: audit log unavailable")
		return
	}
	res := &runner.Result{Started: time.Now(), Ended: time.Now()} // res, err := runner.Run(execCtx, spec)
	resp := &proto.Response{ID: req.ID, Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 0}}}
	if err := tr.Finished(ctx, resp, res); err != nil {
		fmt.Println("answer anyway; log the error")
	}

	files, _ := audit.Files(log.Path())
	v, err := audit.Verify(ctx, files...)
	fmt.Println(v.Records, "records, chain ok:", err == nil)
	// Output: 5 records, chain ok: true
}
