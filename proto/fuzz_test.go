package proto

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var fuzzSeeds = []string{
	`{"id":"550e8400-e29b-41d4-a716-446655440000","host":"workstation.local","session":"claude-code-project-alpha","time":"2026-02-13T14:30:00Z","pipeline":[["apt","install","nginx"]],"env":{"DEBIAN_FRONTEND":"noninteractive"},"reason":"Install nginx to set up a web server","privileged":true,"forward_agent":false}` + "\n",
	`{"time":"2026-02-13T14:30:00Z","pipeline":[["a"],["b","c"]]}` + "\n",
	`{"action":"ping","time":"2026-02-13T14:30:00Z"}` + "\n",
	`{"id":"x","pipeline":[["a"]],"pipeline":[["b"]]}` + "\n",
	`{"time":"2026-02-13T14:30:00Z","pipeline":[["a"]],"env":{"A":"1","A":"2"}}` + "\n",
	`{"time":"2026-02-13T14:30:00Z","pipeline":[["a"]],"privileged":false,"forward_agent":true,"cwd":"/"}` + "\n",
	`{"time":"2026-02-13T14:30:00Z","pipeline":[["tee","/etc/x"]],"stdin":"aGVsbG8K"}` + "\n",
	`{"time":"2026-02-13T14:30:00Z","pipeline":[["a"]],"stdin":""}` + "\n",
	`{"time":"2026-02-13T14:30:00Z","pipeline":[["a"]],"stdin":"!!"}` + "\n",
	`{"action":"stop","time":"2026-02-13T14:30:00Z","pipeline":[]}` + "\n",
	`{"action":"exec","version":"1.1.0","time":"2026-02-13T14:30:00Z","pipeline":[["a"]]}` + "\n",
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
		// The client sends whole seconds, which may move a time at the
		// edge of the window by up to a second.
		reopts := testOpts
		if reopts.MaxClockSkew == 0 {
			reopts.MaxClockSkew = DefaultMaxClockSkew
		}
		reopts.MaxClockSkew += time.Second
		back, err := DecodeRequest(again, reopts)
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
	envBytes := 0
	for k, v := range req.Env {
		if !ValidEnvName(k) || strings.IndexByte(v, 0) >= 0 || len(k) > MaxEnvNameLen {
			t.Fatalf("bad env %q=%q", k, v)
		}
		envBytes += len(k) + len(v)
	}
	if len(req.Env) > MaxEnvVars || envBytes > MaxEnvBytes {
		t.Fatalf("env of %d variables and %d bytes accepted", len(req.Env), envBytes)
	}
	if req.Cwd != "" && req.Cwd[0] != '/' {
		t.Fatalf("relative cwd %q", req.Cwd)
	}
	if len(req.Stdin) > MaxStdinBytes || (req.Stdin != nil && len(req.Stdin) == 0) {
		t.Fatalf("stdin of %d bytes (nil: %v)", len(req.Stdin), req.Stdin == nil)
	}
	if req.Action != ActionExecute && req.Stdin != nil {
		t.Fatalf("stdin on a %s request", req.Action)
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

// hasOnlyExactKeys reports whether every key that case-insensitively names
// a response field is spelled exactly, so encoding/json's case folding does
// not change the meaning.
func hasOnlyExactKeys(line []byte) bool {
	for _, k := range []string{"id", "status", "message", "version", "access", "stages", "stdout", "stdout_truncated", "exit_code", "stderr", "stderr_truncated"} {
		if bytes.Count(bytes.ToLower(line), []byte(`"`+k+`"`)) != bytes.Count(line, []byte(`"`+k+`"`)) {
			return false
		}
	}
	return !bytes.Contains(line, []byte(`\u`)) // an escaped key could spell a field too
}

// FuzzDecodeResponse checks the client-side decoder: never a panic, and
// whatever decodes re-encodes to a line that decodes to the same response.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":"aGk="}],"stdout":"b2sK"}`,
		`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":"","stderr_truncated":true}],"stdout":"","stdout_truncated":true}`,
		`{"id":"","status":"error","message":"x"}`, `{"id":"1","status":"denied"}`, `{}`, `[]`,
		`{"id":"p","status":"ok","message":"pong","version":"1.1.0","access":"user a (uid 1) may use it"}`,
		"{\"id\":\"x\",\"status\":\"ok\",\"stages\":[],\"stdout\":\"AA\nAA\"}",
		`{"id":"x","status":"ok","stages":[{"exit_code":-0,"stderr":"\/w==","x":[{"y":null}]}],"stdout":"AA\u003d="}`,
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
		// The hand-written decoder must never accept what encoding/json
		// calls invalid, and must agree with it on the values.
		var ref responseWire
		if err := json.Unmarshal(line, &ref); err != nil {
			t.Fatalf("DecodeResponse accepted %q, which encoding/json rejects: %v", line, err)
		}
		if !bytes.Contains(bytes.ToLower(line), []byte(`"id"`)) || !hasOnlyExactKeys(line) {
			return // encoding/json matches keys case-insensitively; compare only plain inputs
		}
		if *ref.ID != resp.ID || *ref.Status != resp.Status || ref.Access != resp.Access || ref.Version != resp.Version || (ref.Stdout != nil && !bytes.Equal(*ref.Stdout, resp.Stdout)) || len(ref.Stages) != len(resp.Stages) {
			t.Fatalf("DecodeResponse(%q) = %+v; encoding/json says %+v", line, resp, ref)
		}
		var buf bytes.Buffer
		if err := WriteResponse(&buf, resp); err != nil {
			t.Fatal(err)
		}
		back, err := DecodeResponse(buf.Bytes())
		if err != nil {
			t.Fatalf("re-decoding %s: %v", buf.Bytes(), err)
		}
		if back.ID != resp.ID || back.Status != resp.Status || back.Access != resp.Access || !bytes.Equal(back.Stdout, resp.Stdout) || len(back.Stages) != len(resp.Stages) {
			t.Fatalf("round trip changed %+v into %+v", resp, back)
		}
	})
}
