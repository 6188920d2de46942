package client_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/clienttest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
	"github.com/google/uuid"
)

// promptly bounds how long a cancelled call may take to return. It is
// generous so that a loaded machine running -race does not flake; a call that
// really waits for the server would take forever.
const promptly = 2 * time.Second

func newRequest(pipeline ...[]string) *proto.Request {
	return &proto.Request{
		ID:         "req-1",
		Host:       "box",
		Session:    "s1",
		Pipeline:   pipeline,
		Env:        map[string]string{"A": "1"},
		Reason:     "test",
		Privileged: true,
	}
}

func TestRunAnswers(t *testing.T) {
	tests := []struct {
		name     string
		pipeline [][]string
		handler  clienttest.Handler
		want     *proto.Response
	}{{
		name:     "ok",
		pipeline: [][]string{{"echo", "hi"}},
		handler: clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK,
			Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte("warn\n")}}, Stdout: []byte("hi\n")})),
		want: &proto.Response{ID: "req-1", Status: proto.StatusOK,
			Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte("warn\n")}}, Stdout: []byte("hi\n")},
	}, {
		name:     "multi-stage with truncation",
		pipeline: [][]string{{"a"}, {"b"}, {"c"}},
		handler: clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK,
			Stages: []proto.Stage{{ExitCode: 0}, {ExitCode: 3, Stderr: []byte("b failed"), StderrTruncated: true}, {ExitCode: 141}},
			Stdout: []byte("out"), StdoutTruncated: true})),
		want: &proto.Response{ID: "req-1", Status: proto.StatusOK,
			Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte{}}, {ExitCode: 3, Stderr: []byte("b failed"), StderrTruncated: true}, {ExitCode: 141, Stderr: []byte{}}},
			Stdout: []byte("out"), StdoutTruncated: true},
	}, {
		name:     "denied",
		pipeline: [][]string{{"rm", "-rf", "/"}},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied, Message: "no way"})),
		want:     &proto.Response{ID: "req-1", Status: proto.StatusDenied, Message: "no way"},
	}, {
		name:     "timeout before start",
		pipeline: [][]string{{"true"}},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusTimeout, Message: "nobody approved"})),
		want:     &proto.Response{ID: "req-1", Status: proto.StatusTimeout, Message: "nobody approved"},
	}, {
		name:     "timeout while running",
		pipeline: [][]string{{"sleep", "9"}, {"cat"}},
		handler: clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusTimeout, Message: "killed",
			Stages: []proto.Stage{{ExitCode: 137}, {ExitCode: 0}}, Stdout: []byte("part")})),
		want: &proto.Response{ID: "req-1", Status: proto.StatusTimeout, Message: "killed",
			Stages: []proto.Stage{{ExitCode: 137, Stderr: []byte{}}, {ExitCode: 0, Stderr: []byte{}}}, Stdout: []byte("part")},
	}, {
		name:     "error with id",
		pipeline: [][]string{{"true"}},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusError, Message: "bad cwd"})),
		want:     &proto.Response{ID: "req-1", Status: proto.StatusError, Message: "bad cwd"},
	}, {
		name:     "error without id",
		pipeline: [][]string{{"true"}},
		handler: clienttest.Reply(func(*proto.Request) string {
			return `{"id":"","status":"error","message":"invalid JSON"}` + "\n"
		}),
		want: &proto.Response{ID: "", Status: proto.StatusError, Message: "invalid JSON"},
	}, {
		name:     "unknown fields are ignored",
		pipeline: [][]string{{"true"}},
		handler: clienttest.Reply(func(req *proto.Request) string {
			return `{"id":"` + req.ID + `","status":"ok","new":{"x":[1]},"stages":[{"exit_code":0,"stderr":"","cpu":1.5}],"stdout":"aGk="}` + "\n"
		}),
		want: &proto.Response{ID: "req-1", Status: proto.StatusOK,
			Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte{}}}, Stdout: []byte("hi")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, tt.handler)
			got, err := client.New(srv.Socket).Run(context.Background(), newRequest(tt.pipeline...))
			if err != nil {
				t.Fatalf("Run: unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Run:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRunProtocolViolations(t *testing.T) {
	const okStage = `"stages":[{"exit_code":0,"stderr":""}],"stdout":""`
	tests := []struct {
		name     string
		pipeline [][]string
		line     string // %ID% is replaced by the request's id
		wantErr  string
	}{{
		name:    "id mismatch",
		line:    `{"id":"other","status":"ok",` + okStage + "}\n",
		wantErr: `read response: protocol violation: response id "other" does not match request id "req-1"`,
	}, {
		name:    "empty id on a denial",
		line:    `{"id":"","status":"denied"}` + "\n",
		wantErr: `read response: protocol violation: response id "" does not match request id "req-1"`,
	}, {
		name:    "missing newline",
		line:    `{"id":"%ID%","status":"denied"}`,
		wantErr: "read response: protocol violation: the response ended after 32 bytes without its trailing newline",
	}, {
		name:    "garbage",
		line:    "hello\n",
		wantErr: "read response: protocol violation: response is not a valid JSON object: at byte offset 0: the response is not a JSON object",
	}, {
		name:    "not an object",
		line:    "[1]\n",
		wantErr: "read response: protocol violation: response is not a valid JSON object: at byte offset 0: the response is not a JSON object",
	}, {
		name:    "unknown status",
		line:    `{"id":"%ID%","status":"maybe"}` + "\n",
		wantErr: `read response: protocol violation: unknown status "maybe"`,
	}, {
		name:    "closed without answering",
		line:    "",
		wantErr: "read response: protocol violation: the daemon closed the connection without answering",
	}, {
		name:    "ok without stages",
		line:    `{"id":"%ID%","status":"ok"}` + "\n",
		wantErr: "read response: protocol violation: ok response has no stages",
	}, {
		name:    "stdout without stages",
		line:    `{"id":"%ID%","status":"ok","stdout":""}` + "\n",
		wantErr: "read response: protocol violation: response has stdout but no stages",
	}, {
		name:     "ok with too few stages",
		pipeline: [][]string{{"a"}, {"b"}},
		line:     `{"id":"%ID%","status":"ok",` + okStage + "}\n",
		wantErr:  "read response: protocol violation: ok response has 1 stages for a pipeline of 2",
	}, {
		name:     "timeout with too many stages",
		pipeline: [][]string{{"a"}},
		line:     `{"id":"%ID%","status":"timeout","stages":[{"exit_code":0},{"exit_code":0}]}` + "\n",
		wantErr:  "read response: protocol violation: timeout response has 2 stages for a pipeline of 1",
	}, {
		name:    "denied with stages",
		line:    `{"id":"%ID%","status":"denied",` + okStage + "}\n",
		wantErr: "read response: protocol violation: denied response has stages; only ok and timeout responses may",
	}, {
		name:    "stage without exit code",
		line:    `{"id":"%ID%","status":"ok","stages":[{"stderr":""}],"stdout":""}` + "\n",
		wantErr: "read response: protocol violation: stage 0 has no exit_code",
	}, {
		name:    "negative exit code",
		line:    `{"id":"%ID%","status":"ok","stages":[{"exit_code":-1}],"stdout":""}` + "\n",
		wantErr: "read response: protocol violation: stage 0 has exit_code -1; exit codes are 0 to 255",
	}, {
		name:    "exit code above 255",
		line:    `{"id":"%ID%","status":"ok","stages":[{"exit_code":256}],"stdout":""}` + "\n",
		wantErr: "read response: protocol violation: stage 0 has exit_code 256; exit codes are 0 to 255",
	}, {
		name:    "bad base64",
		line:    `{"id":"%ID%","status":"ok","stages":[{"exit_code":0}],"stdout":"!!"}` + "\n",
		wantErr: "read response: protocol violation: response is not a valid JSON object: illegal base64 data at input byte 0",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, clienttest.Reply(func(req *proto.Request) string {
				return strings.ReplaceAll(tt.line, "%ID%", req.ID)
			}))
			if tt.pipeline == nil {
				tt.pipeline = [][]string{{"true"}}
			}
			resp, raw, err := client.New(srv.Socket).RunRaw(context.Background(), newRequest(tt.pipeline...))
			if err == nil {
				t.Fatalf("RunRaw: got %+v, want error %q", resp, tt.wantErr)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("RunRaw: error\n got %q\nwant %q", err, tt.wantErr)
			}
			if !errors.Is(err, proto.ErrProtocol) {
				t.Errorf("RunRaw: error %q does not wrap proto.ErrProtocol", err)
			}
			if resp != nil || raw != nil {
				t.Errorf("RunRaw: got response %+v and line %q with an error, want neither", resp, raw)
			}
		})
	}
}

func TestRunFillsDefaultsWithoutModifyingRequest(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied})))
	req := &proto.Request{Pipeline: [][]string{{"id"}}, Privileged: true}
	before := time.Now()
	resp, err := client.New(srv.Socket).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if req.ID != "" || !req.Time.IsZero() {
		t.Errorf("Run modified the caller's request: ID %q, Time %v", req.ID, req.Time)
	}
	got := srv.Requests()
	if len(got) != 1 {
		t.Fatalf("server read %d requests, want 1", len(got))
	}
	if _, err := uuid.Parse(got[0].ID); err != nil {
		t.Errorf("sent id %q is not a UUID: %v", got[0].ID, err)
	}
	if resp.ID != got[0].ID {
		t.Errorf("response id %q, want the sent id %q", resp.ID, got[0].ID)
	}
	if got[0].Time.Before(before.Truncate(time.Second)) || got[0].Time.After(time.Now()) {
		t.Errorf("sent time %v is not the time of the call (%v)", got[0].Time, before)
	}
}

func TestRunSendsRequest(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied})))
	when := time.Now().Add(-time.Second).Round(0)
	req := &proto.Request{
		ID: "abc", Host: "h", Session: "s", Time: when, Reason: "why",
		Pipeline: [][]string{{"ls", "-l"}, {"grep", "x y"}}, Env: map[string]string{"K": "v=w"},
		Privileged: false, ForwardAgent: true, Cwd: "/tmp",
	}
	if _, err := client.New(srv.Socket).Run(context.Background(), req); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := *req
	want.Action = proto.ActionExecute // what the daemon's decoder fills in
	got := srv.Requests()
	if len(got) != 1 {
		t.Fatalf("server read %d requests, want 1", len(got))
	}
	// Whole seconds of UTC: the protocol's origin (sudo-proxy) accepts
	// only YYYY-MM-DDTHH:MM:SSZ.
	if !got[0].Time.Equal(want.Time.Truncate(time.Second)) || got[0].Time.Nanosecond() != 0 {
		t.Errorf("sent time %v, want %v", got[0].Time, want.Time.Truncate(time.Second))
	}
	got[0].Time = want.Time
	if !reflect.DeepEqual(got[0], &want) {
		t.Errorf("sent\n %+v\nwant\n %+v", got[0], &want)
	}
}

func TestRunLargeResponse(t *testing.T) {
	testenv.Slow(t, "decodes a 40 MiB response")
	testenv.SkipUnderRace(t, "decodes a 40 MiB response in one goroutine: nothing for the race detector to find")
	rng := rand.NewChaCha8([32]byte{1})
	random := func(n int) []byte {
		b := make([]byte, n)
		rng.Read(b) // never fails
		return b
	}
	want := &proto.Response{
		ID: "req-1", Status: proto.StatusOK,
		Stages: []proto.Stage{
			{ExitCode: 0, Stderr: random(8 << 20)},
			{ExitCode: 1, Stderr: random(6 << 20)},
		},
		Stdout: random(proto.MaxOutputBytes),
	}
	var line bytes.Buffer
	if err := proto.WriteResponse(&line, want); err != nil {
		t.Fatal(err)
	}
	if line.Len() < 40<<20 {
		t.Fatalf("test response is only %d bytes; it should exceed 40 MiB", line.Len())
	}
	srv := clienttest.NewServer(t, clienttest.Reply(func(*proto.Request) string { return line.String() }))
	got, raw, err := client.New(srv.Socket).RunRaw(context.Background(), newRequest([]string{"a"}, []string{"b"}))
	if err != nil {
		t.Fatalf("RunRaw: %v", err)
	}
	if !bytes.Equal(got.Stdout, want.Stdout) {
		t.Errorf("stdout: got %d bytes, want %d, and they differ", len(got.Stdout), len(want.Stdout))
	}
	for i := range want.Stages {
		if !bytes.Equal(got.Stages[i].Stderr, want.Stages[i].Stderr) || got.Stages[i].ExitCode != want.Stages[i].ExitCode {
			t.Errorf("stage %d: got exit %d and %d bytes of stderr, want exit %d and %d bytes, and they differ",
				i, got.Stages[i].ExitCode, len(got.Stages[i].Stderr), want.Stages[i].ExitCode, len(want.Stages[i].Stderr))
		}
	}
	if !bytes.Equal(raw, line.Bytes()) {
		t.Errorf("raw line: got %d bytes, want the %d the server sent", len(raw), line.Len())
	}
}

func TestRunRawLine(t *testing.T) {
	const line = `{"id":"req-1","status":"ok","extra":true,"stages":[{"exit_code":2,"stderr":"ZQ=="}],"stdout":"bw=="}` + "\n"
	srv := clienttest.NewServer(t, clienttest.Reply(func(*proto.Request) string { return line }))
	resp, raw, err := client.New(srv.Socket).RunRaw(context.Background(), newRequest([]string{"x"}))
	if err != nil {
		t.Fatalf("RunRaw: %v", err)
	}
	if string(raw) != line {
		t.Errorf("raw line: got %q, want %q", raw, line)
	}
	if resp.Stages[0].ExitCode != 2 || string(resp.Stdout) != "o" || string(resp.Stages[0].Stderr) != "e" {
		t.Errorf("decoded %+v, want exit 2, stdout \"o\", stderr \"e\"", resp)
	}
}

// TestRunAnswerBeforeRequestRead covers a daemon that refuses a peer without
// reading its request: the client's write fails, but the daemon's answer is
// what the caller gets.
func TestRunAnswerBeforeRequestRead(t *testing.T) {
	srv := clienttest.NewServer(t, func(c *clienttest.Conn) {
		proto.WriteResponse(c, &proto.Response{ID: "", Status: proto.StatusError, Message: "uid 1000 may not use agent-sudo"})
	})
	// Larger than the socket buffers, so the write cannot complete before
	// the daemon closes.
	req := newRequest([]string{"echo", strings.Repeat("x", 900<<10)})
	resp, err := client.New(srv.Socket).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := &proto.Response{Status: proto.StatusError, Message: "uid 1000 may not use agent-sudo"}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("Run: got %+v, want %+v", resp, want)
	}
}

// daemonWords is what the daemon's decoder says about r, without
// "invalid request: ": the client must refuse r in exactly these words.
func daemonWords(t *testing.T, r *proto.Request) string {
	t.Helper()
	c := *r
	if c.ID == "" {
		c.ID = "x"
	}
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	for i := range c.Pipeline {
		if c.Pipeline[i] == nil {
			c.Pipeline[i] = []string{"x"}
		}
	}
	line, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	_, err = proto.DecodeRequest(line, proto.DecodeOptions{})
	if err == nil {
		t.Fatalf("the daemon's decoder accepts %s", line)
	}
	return strings.TrimPrefix(err.Error(), "invalid request: ")
}

func TestRunBadRequest(t *testing.T) {
	tests := []struct {
		name     string
		req      *proto.Request
		wantErr  string
		wantKind error
	}{{
		name:     "nil",
		req:      nil,
		wantErr:  "encode request: invalid request: the request is nil",
		wantKind: proto.ErrInvalid,
	}, {
		name:     "argument not UTF-8",
		req:      newRequest([]string{"cat", "caf\xe9"}),
		wantErr:  `encode request: invalid request: field "pipeline[0][1]": is not valid UTF-8; the protocol carries only UTF-8 text`,
		wantKind: proto.ErrInvalid,
	}, {
		name:     "env value not UTF-8",
		req:      &proto.Request{Pipeline: [][]string{{"x"}}, Env: map[string]string{"K": "\xff"}},
		wantErr:  `encode request: invalid request: field "env.K": is not valid UTF-8; the protocol carries only UTF-8 text`,
		wantKind: proto.ErrInvalid,
	}, {
		name:     "reason not UTF-8",
		req:      &proto.Request{Pipeline: [][]string{{"x"}}, Reason: "\xc0"},
		wantErr:  `encode request: invalid request: field "reason": is not valid UTF-8; the protocol carries only UTF-8 text`,
		wantKind: proto.ErrInvalid,
	}, {
		// The daemon refuses these (its decoder's words); the client
		// refuses them the same way, before it connects.
		name:     "NUL in an argument",
		req:      newRequest([]string{"cat", "a\x00b"}),
		wantErr:  "encode request: invalid request: " + daemonWords(t, newRequest([]string{"cat", "a\x00b"})),
		wantKind: proto.ErrInvalid,
	}, {
		name:     "relative cwd",
		req:      &proto.Request{Pipeline: [][]string{{"x"}}, Cwd: "tmp"},
		wantErr:  "encode request: invalid request: " + daemonWords(t, &proto.Request{Pipeline: [][]string{{"x"}}, Cwd: "tmp"}),
		wantKind: proto.ErrInvalid,
	}, {
		name:     "too many stages",
		req:      &proto.Request{Pipeline: make([][]string, proto.MaxStages+1)},
		wantErr:  "encode request: invalid request: " + daemonWords(t, &proto.Request{Pipeline: make([][]string, proto.MaxStages+1)}),
		wantKind: proto.ErrInvalid,
	}, {
		name:     "too large",
		req:      &proto.Request{ID: "x", Time: time.Date(2026, 2, 13, 14, 30, 0, 0, time.UTC), Pipeline: [][]string{{"echo", strings.Repeat("a", proto.MaxRequestBytes)}}},
		wantErr:  "encode request: request too large: the request line is 1048727 bytes; at most 1048576 are allowed",
		wantKind: proto.ErrTooLarge,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied})))
			_, err := client.New(srv.Socket).Run(context.Background(), tt.req)
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("Run: error\n got %v\nwant %s", err, tt.wantErr)
			}
			if !errors.Is(err, tt.wantKind) {
				t.Errorf("Run: error %v does not wrap %v", err, tt.wantKind)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("server read %d requests, want none", n)
			}
		})
	}
}

func TestRunCancelWhileWaiting(t *testing.T) {
	got, closed := make(chan *proto.Request, 1), make(chan struct{}, 1)
	srv := clienttest.NewServer(t, clienttest.Hang(got, closed))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := client.New(srv.Socket).Run(ctx, newRequest([]string{"true"}))
		errc <- err
	}()
	select {
	case <-got:
	case err := <-errc:
		t.Fatalf("Run returned before the server read the request: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server never read the request")
	}
	cancel()
	start := time.Now()
	select {
	case err := <-errc:
		if took := time.Since(start); took > promptly {
			t.Errorf("Run took %v to return after cancel", took)
		}
		if want := "read response: context canceled"; err == nil || err.Error() != want {
			t.Errorf("Run: error %v, want %q", err, want)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run: error %v does not wrap context.Canceled", err)
		}
	case <-time.After(promptly):
		t.Fatalf("Run did not return within %v of cancel", promptly)
	}
	select {
	case <-closed:
	case <-time.After(promptly):
		t.Errorf("the client did not close the connection within %v of cancel", promptly)
	}
}

func TestRunDeadline(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Hang(nil, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := client.New(srv.Socket).Run(ctx, newRequest([]string{"true"}))
	if took := time.Since(start); took > 200*time.Millisecond+promptly {
		t.Errorf("Run took %v with a 200ms deadline", took)
	}
	if want := "read response: context deadline exceeded"; err == nil || err.Error() != want {
		t.Errorf("Run: error %v, want %q", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run: error %v does not wrap context.DeadlineExceeded", err)
	}
}

func TestRunCancelledBeforeDial(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Hang(nil, nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := client.New(srv.Socket).Run(ctx, newRequest([]string{"true"}))
	if want := "connect to " + srv.Socket + ": context canceled"; err == nil || err.Error() != want {
		t.Errorf("Run: error %v, want %q", err, want)
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, client.ErrUnreachable) {
		t.Errorf("Run: error %v should wrap context.Canceled and not ErrUnreachable", err)
	}
}

func TestRunUnreachable(t *testing.T) {
	dir := t.TempDir()
	refused := filepath.Join(dir, "refused.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: refused, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // the file stays; nothing listens
	notSocket := filepath.Join(dir, "file")
	if err := os.WriteFile(notSocket, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, socket string
		errno        syscall.Errno
		wantErr      string
	}{
		{"missing", filepath.Join(dir, "missing.sock"), syscall.ENOENT, "no such file or directory"},
		{"refused", refused, syscall.ECONNREFUSED, "connection refused"},
		{"not a socket", notSocket, syscall.ECONNREFUSED, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.New(tt.socket).Run(context.Background(), newRequest([]string{"true"}))
			want := "cannot reach agent-sudod at " + tt.socket + ": " + tt.wantErr
			if err == nil || err.Error() != want {
				t.Errorf("Run: error %v, want %q", err, want)
			}
			if !errors.Is(err, client.ErrUnreachable) || !errors.Is(err, tt.errno) {
				t.Errorf("Run: error %v should wrap ErrUnreachable and %v", err, tt.errno)
			}
			var ue *client.UnreachableError
			if !errors.As(err, &ue) || ue.Socket != tt.socket {
				t.Errorf("Run: error %v is not an *UnreachableError for %s", err, tt.socket)
			}
		})
	}
}

func TestZeroClientUsesDefaultSocket(t *testing.T) {
	if _, err := os.Stat(client.DefaultSocket); err == nil {
		t.Skipf("%s exists; a daemon may be running", client.DefaultSocket)
	}
	var c client.Client
	_, err := c.Run(context.Background(), newRequest([]string{"true"}))
	var ue *client.UnreachableError
	if !errors.As(err, &ue) || ue.Socket != client.DefaultSocket {
		t.Errorf("Run on a zero Client: error %v, want an *UnreachableError for %s", err, client.DefaultSocket)
	}
}

func TestPing(t *testing.T) {
	tests := []struct {
		name    string
		handler clienttest.Handler
		want    *proto.Response
		wantErr string
	}{{
		name:    "ok",
		handler: clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Version: "1.2.3"})),
		want:    &proto.Response{Status: proto.StatusOK, Version: "1.2.3"},
	}, {
		name:    "denied",
		handler: clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied, Message: "not for you"})),
		want:    &proto.Response{Status: proto.StatusDenied, Message: "not for you"},
	}, {
		name: "stages",
		handler: clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK,
			Stages: []proto.Stage{{ExitCode: 0}}})),
		wantErr: "read response: protocol violation: ok response to a ping request has stages",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, tt.handler)
			got, err := client.New(srv.Socket).Ping(context.Background())
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("Ping: error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Ping: %v", err)
			}
			sent := srv.Requests()
			if len(sent) != 1 || sent[0].Action != proto.ActionPing || sent[0].Pipeline != nil {
				t.Fatalf("server read %+v, want one ping without a pipeline", sent)
			}
			tt.want.ID = sent[0].ID
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Ping: got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRelativeArg(t *testing.T) {
	for _, tt := range []struct {
		pipeline [][]string
		stage    int
		arg      string
		ok       bool
	}{
		{[][]string{{"touch", "./f"}}, 0, "./f", true},
		{[][]string{{"ls", "-l", "."}}, 0, ".", true},
		{[][]string{{"true"}, {"cp", "a", "../b"}}, 1, "../b", true},
		{[][]string{{"cat", ".."}}, 0, "..", true},
		{[][]string{{"./script", "x"}}, 0, "", false}, // a program's name is the daemon's to resolve
		{[][]string{{"touch", "/tmp/f"}}, 0, "", false},
		{[][]string{{"echo", ".hidden", "a./b", "..."}}, 0, "", false},
	} {
		stage, arg, ok := client.RelativeArg(tt.pipeline)
		if stage != tt.stage || arg != tt.arg || ok != tt.ok {
			t.Errorf("RelativeArg(%q) = %d, %q, %v; want %d, %q, %v", tt.pipeline, stage, arg, ok, tt.stage, tt.arg, tt.ok)
		}
	}
}
