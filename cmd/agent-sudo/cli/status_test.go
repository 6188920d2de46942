package cli

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/clienttest"
	"github.com/agent-sudo/agent-sudo/proto"
)

func TestStatus(t *testing.T) {
	tests := []struct {
		name       string
		resp       *proto.Response
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"up and allowed", &proto.Response{Status: proto.StatusOK, Version: "v1", Message: "pong", Access: "user alice may use it"},
			0, "agent-sudod v1 is up and user alice may use it (socket %SOCK%)\n", ""},
		{"a sudo-proxy daemon answers only its own user", &proto.Response{Status: proto.StatusOK, Version: "1.1.0", Message: "pong"},
			0, "agent-sudod 1.1.0 is up and you may use it (socket %SOCK%)\n", ""},
		{"up, not allowed", &proto.Response{Status: proto.StatusError, Message: "not allowed: user bob (uid 1001) may not use agent-sudo; ask"},
			77, "", "agent-sudo: agent-sudod is up at %SOCK%, but not allowed: user bob (uid 1001) may not use agent-sudo; ask\n"},
		{"busy says nothing about access", &proto.Response{Status: proto.StatusError, Message: "busy: uid 1001 already has 8 connections open or waiting (max_connections_per_user); close some and try again"},
			75, "", "agent-sudo: agent-sudod is up at %SOCK% but did not say whether you may use it: busy: uid 1001 already has 8 connections open or waiting (max_connections_per_user); close some and try again\n"},
		{"rate limited", &proto.Response{Status: proto.StatusError, Message: "rate limited: uid 1001 opened more than 2 connections in the last minute (max_requests_per_minute); try again in 9s"},
			75, "", "agent-sudo: agent-sudod is up at %SOCK% but did not say whether you may use it: rate limited: uid 1001 opened more than 2 connections in the last minute (max_requests_per_minute); try again in 9s\n"},
		{"hostile access and version are escaped", &proto.Response{Status: proto.StatusOK, Version: "v\x1b]0;x\a", Message: "pong", Access: "up\x1b[2J\u202e"},
			0, "agent-sudod v\\x1b]0;x\\x07 is up and up\\x1b[2J\\u202e (socket %SOCK%)\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, clienttest.Respond(func(req *proto.Request) *proto.Response {
				if req.Action != proto.ActionPing {
					t.Errorf("status sent action %q, want ping", req.Action)
				}
				r := *tt.resp
				r.ID = req.ID
				return &r
			}))
			got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "status")
			want := func(s string) string { return strings.ReplaceAll(s, "%SOCK%", srv.Socket) }
			if got.code != tt.wantCode || got.stdout != want(tt.wantStdout) || got.stderr != want(tt.wantStderr) {
				t.Errorf("status = %d\nstdout %q\nstderr %q\nwant %d\nstdout %q\nstderr %q", got.code, got.stdout, got.stderr,
					tt.wantCode, want(tt.wantStdout), want(tt.wantStderr))
			}
		})
	}
	t.Run("a busy daemon is not retried", func(t *testing.T) {
		var asked atomic.Int32
		srv := clienttest.NewServer(t, clienttest.Respond(func(req *proto.Request) *proto.Response {
			asked.Add(1)
			// As the daemon sends it: before reading, so without an id.
			return &proto.Response{Status: proto.StatusError, Message: "busy: 64 connections are open or waiting (max_connections); try again"}
		}))
		got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "status")
		if got.code != 75 || !strings.Contains(got.stderr, "did not say whether you may use it: busy:") || asked.Load() != 1 {
			t.Errorf("status = %d %q after %d connections, want 75 after 1", got.code, got.stderr, asked.Load())
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		sock := t.TempDir() + "/none.sock"
		got := runCLI(context.Background(), map[string]string{envSocket: sock}, "status")
		if got.code != 69 || !strings.Contains(got.stderr, "agent-sudod is not running: nothing answers at "+sock) {
			t.Errorf("status = %d %q", got.code, got.stderr)
		}
	})
	t.Run("bad argument", func(t *testing.T) {
		got := runCLI(context.Background(), nil, "status", "extra")
		if got.code != 2 || got.stderr != "agent-sudo: status: unexpected argument \"extra\"; see 'agent-sudo help status'\n" {
			t.Errorf("status = %d %q", got.code, got.stderr)
		}
	})
}

func TestRunWaitNotice(t *testing.T) {
	// The answer comes once the notice is out (no delay before it here),
	// not after a sleep.
	noticed := make(chan struct{})
	srv := clienttest.NewServer(t, clienttest.Respond(func(req *proto.Request) *proto.Response {
		select {
		case <-noticed:
		case <-time.After(time.Minute): // no notice: the checks below say so
		}
		return &proto.Response{ID: req.ID, Status: proto.StatusOK, Stages: []proto.Stage{{}}, Stdout: []byte("done\n")}
	}))
	got := runWatched(t, context.Background(), map[string]string{envSocket: srv.Socket},
		"it may need a human's approval, or the command is still running\n", func() { close(noticed) }, nil, "run", "true")
	if got.code != 0 || got.stdout != "done\n" {
		t.Fatalf("run = %d %q %q", got.code, got.stdout, got.stderr)
	}
	if !strings.Contains(got.stderr, "agent-sudo: waiting for agent-sudod to answer request ") ||
		!strings.Contains(got.stderr, "it may need a human's approval, or the command is still running\n") {
		t.Errorf("no waiting notice on stderr: %q", got.stderr)
	}

	quick := clienttest.NewServer(t, clienttest.Respond(func(req *proto.Request) *proto.Response {
		return &proto.Response{ID: req.ID, Status: proto.StatusOK, Stages: []proto.Stage{{}}}
	}))
	if got := runCLI(context.Background(), map[string]string{envSocket: quick.Socket}, "run", "true"); got.stderr != "" {
		t.Errorf("a quick answer printed %q", got.stderr)
	}
}
