package proto

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	`{"id":"550e8400-e29b-41d4-a716-446655440000","host":"workstation.local","session":"claude-code-project-alpha","time":"2026-02-13T14:30:00Z","pipeline":[["apt","install","nginx"]],"env":{"DEBIAN_FRONTEND":"noninteractive"},"reason":"Install nginx to set up a web server","privileged":true,"forward_agent":false}` + "\n",
	`{"time":"2026-02-13T14:30:00Z","pipeline":[["a"],["b","c"]]}` + "\n",
	`{"action":"ping","time":"2026-02-13T14:30:00Z"}` + "\n",
	`{"id":"x","pipeline":[["a"]],"pipeline":[["b"]]}` + "\n",
	`{"time":"2026-02-13T14:30:00Z","pipeline":[["a"]],"env":{"A":"1","A":"2"}}` + "\n",
	`{"time":"2026-02-13T14:30:00Z","pipeline":[["a"]],"privileged":false,"forward_agent":true,"cwd":"/"}` + "\n",
	`[]` + "\n", `{` + "\n", "\n", "", `{"id":"\u0000"}`, "{\"id\":\"\xff\"}\n",
}

// FuzzDecodeRequest checks that any line either decodes into a request that
// satisfies every documented invariant, or fails with a *RequestError; and
// that a decoded request survives MarshalJSON and decodes to the same thing.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := DecodeRequest(line, testOpts)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %v (%T) is not a *RequestError", err, err)
			}
			if req != nil {
				t.Fatal("request returned alongside an error")
			}
			return
		}
		checkInvariants(t, req)
		again, err := req.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		back, err := DecodeRequest(again, testOpts)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		assertRequest(t, back, req)
	})
}

func checkInvariants(t *testing.T, req *Request) {
	t.Helper()
	if req.ID == "" || len(req.ID) > MaxIDLen || checkID(req.ID) != "" {
		t.Fatalf("bad id %q", req.ID)
	}
	if req.Privileged && req.ForwardAgent {
		t.Fatal("forward_agent with privileged")
	}
	if req.Action == ActionExecute && (len(req.Pipeline) == 0 || len(req.Pipeline) > MaxStages) {
		t.Fatalf("pipeline of %d stages", len(req.Pipeline))
	}
	for _, st := range req.Pipeline {
		if len(st) == 0 || st[0] == "" {
			t.Fatalf("empty stage or program in %q", req.Pipeline)
		}
		for _, a := range st {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("NUL in %q", a)
			}
		}
	}
	for k, v := range req.Env {
		if !ValidEnvName(k) || strings.IndexByte(v, 0) >= 0 {
			t.Fatalf("bad env %q=%q", k, v)
		}
	}
	if req.Cwd != "" && req.Cwd[0] != '/' {
		t.Fatalf("relative cwd %q", req.Cwd)
	}
	if req.Time.IsZero() {
		t.Fatal("zero time accepted")
	}
}

// FuzzReadLine checks the framing rules on arbitrary byte streams.
func FuzzReadLine(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		line, err := ReadLine(bytes.NewReader(data))
		i := bytes.IndexByte(data, '\n')
		switch {
		case len(data) == 0:
			if !errors.Is(err, ErrEmpty) {
				t.Fatalf("empty input: %v", err)
			}
		case i < 0:
			if !errors.Is(err, ErrMissingNewline) {
				t.Fatalf("no newline: %v", err)
			}
		case err != nil || !bytes.Equal(line, data[:i+1]):
			t.Fatalf("ReadLine = %q, %v; want %q", line, err, data[:i+1])
		}
	})
}

// FuzzDecodeResponse checks the client-side decoder: never a panic, and
// whatever decodes re-encodes to a line that decodes to the same response.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":"aGk="}],"stdout":"b2sK"}`,
		`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":"","stderr_truncated":true}],"stdout":"","stdout_truncated":true}`,
		`{"id":"","status":"error","message":"x"}`, `{"id":"1","status":"denied"}`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		resp, err := DecodeResponse(line)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not wrap ErrProtocol", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteResponse(&buf, resp); err != nil {
			t.Fatal(err)
		}
		back, err := DecodeResponse(buf.Bytes())
		if err != nil {
			t.Fatalf("re-decoding %s: %v", buf.Bytes(), err)
		}
		if back.ID != resp.ID || back.Status != resp.Status || !bytes.Equal(back.Stdout, resp.Stdout) || len(back.Stages) != len(resp.Stages) {
			t.Fatalf("round trip changed %+v into %+v", resp, back)
		}
	})
}
