package proto

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

func encode(t testing.TB, r *Response) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteResponse(&buf, r); err != nil {
		t.Fatalf("WriteResponse: %v", err)
	}
	return buf.String()
}

func TestWriteResponse(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name string
		resp Response
		want string
	}{
		{"single command", Response{ID: "550e", Status: StatusOK, Stages: []Stage{{ExitCode: 0, Stderr: []byte("warn\n")}}, Stdout: []byte("hello\n")},
			`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":"` + b64([]byte("warn\n")) + `"}],"stdout":"` + b64([]byte("hello\n")) + `"}` + "\n"},
		{"two stages, empty output", Response{ID: "550e", Status: StatusOK, Stages: []Stage{{}, {ExitCode: 3}}},
			`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":""},{"exit_code":3,"stderr":""}],"stdout":""}` + "\n"},
		{"truncation flags only when true", Response{ID: "550e", Status: StatusOK, Stages: []Stage{{Stderr: []byte{0xff}, StderrTruncated: true}, {}}, Stdout: []byte{0, 1, 2}, StdoutTruncated: true},
			`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":"/w==","stderr_truncated":true},{"exit_code":0,"stderr":""}],"stdout":"AAEC","stdout_truncated":true}` + "\n"},
		{"denied", Response{ID: "550e", Status: StatusDenied}, `{"id":"550e","status":"denied"}` + "\n"},
		{"timeout", Response{ID: "550e", Status: StatusTimeout}, `{"id":"550e","status":"timeout"}` + "\n"},
		{"timeout with output", Response{ID: "550e", Status: StatusTimeout, Message: "killed", Stages: []Stage{{ExitCode: 143}}, Stdout: []byte("x")},
			`{"id":"550e","status":"timeout","message":"killed","stages":[{"exit_code":143,"stderr":""}],"stdout":"eA=="}` + "\n"},
		{"error without id", Response{Status: StatusError, Message: "bad \"input\"\n<>&\u2028"},
			`{"id":"","status":"error","message":"bad \"input\"\n\u003c\u003e\u0026\u2028"}` + "\n"},
		{"ping", Response{ID: "p", Status: StatusOK, Message: PingMessage, Version: "1.2.3", Access: "user a (uid 1) may use it: listed"},
			`{"id":"p","status":"ok","message":"pong","version":"1.2.3","access":"user a (uid 1) may use it: listed"}` + "\n"},
		{"negative exit code survives", Response{ID: "n", Status: StatusOK, Stages: []Stage{{ExitCode: -1}}},
			`{"id":"n","status":"ok","stages":[{"exit_code":-1,"stderr":""}],"stdout":""}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := encode(t, &tt.resp)
			if got != tt.want {
				t.Fatalf("WriteResponse:\n got %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not valid JSON: %s", got)
			}
			back, err := DecodeResponse([]byte(got))
			if err != nil {
				t.Fatalf("DecodeResponse: %v", err)
			}
			if again := encode(t, back); again != got {
				t.Errorf("decode/encode round trip changed the line:\n got %s\nwant %s", again, got)
			}
		})
	}
}

func TestDecodeResponseReferenceExamples(t *testing.T) {
	// The response examples of docs/protocol.md, with real base64
	// in place of the "<base64>" placeholders.
	tests := []struct {
		line string
		want Response
	}{
		{`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":"aGk="}],"stdout":"b2sK"}`,
			Response{ID: "550e", Status: StatusOK, Stages: []Stage{{Stderr: []byte("hi")}}, Stdout: []byte("ok\n")}},
		{`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":""},{"exit_code":0,"stderr":""}],"stdout":"b2sK"}`,
			Response{ID: "550e", Status: StatusOK, Stages: []Stage{{Stderr: []byte{}}, {Stderr: []byte{}}}, Stdout: []byte("ok\n")}},
		{`{"id":"550e","status":"ok","stages":[{"exit_code":0,"stderr":"aGk=","stderr_truncated":true}],"stdout":"b2sK","stdout_truncated":true}`,
			Response{ID: "550e", Status: StatusOK, Stages: []Stage{{Stderr: []byte("hi"), StderrTruncated: true}}, Stdout: []byte("ok\n"), StdoutTruncated: true}},
		{`{"id":"550e","status":"denied"}`, Response{ID: "550e", Status: StatusDenied}},
		{`{"id":"550e","status":"timeout"}`, Response{ID: "550e", Status: StatusTimeout}},
		{`{"id":"550e","status":"error","message":"..."}`, Response{ID: "550e", Status: StatusError, Message: "..."}},
		{`{"id":"550e","status":"ok","stages":[{"exit_code":1,"stderr":"","signal":"TERM"}],"stdout":"","future":{"x":1}}`,
			Response{ID: "550e", Status: StatusOK, Stages: []Stage{{ExitCode: 1, Stderr: []byte{}}}, Stdout: []byte{}}},
	}
	for _, tt := range tests {
		got, err := DecodeResponse([]byte(tt.line + "\n"))
		if err != nil {
			t.Errorf("DecodeResponse(%s): %v", tt.line, err)
			continue
		}
		if got.ID != tt.want.ID || got.Status != tt.want.Status || got.Message != tt.want.Message ||
			!bytes.Equal(got.Stdout, tt.want.Stdout) || got.StdoutTruncated != tt.want.StdoutTruncated ||
			len(got.Stages) != len(tt.want.Stages) {
			t.Errorf("DecodeResponse(%s) = %+v, want %+v", tt.line, got, tt.want)
			continue
		}
		for i := range got.Stages {
			g, w := got.Stages[i], tt.want.Stages[i]
			if g.ExitCode != w.ExitCode || !bytes.Equal(g.Stderr, w.Stderr) || g.StderrTruncated != w.StderrTruncated {
				t.Errorf("stage %d of %s = %+v, want %+v", i, tt.line, g, w)
			}
		}
	}
}

func TestDecodeResponseViolations(t *testing.T) {
	tests := []struct{ line, want string }{
		{`nope`, "protocol violation: response is not a valid JSON object: at byte offset 0: the response is not a JSON object"},
		{`{"id":"x","status":"ok","stages":[{"exit_code":0,"stderr":""}],"stdout":"` + "\n" + `"}`, "protocol violation: response is not a valid JSON object: at byte offset 73: control character 0x0a in string"},
		{`{"id":"x","id":"y","status":"ok"}`, `protocol violation: response is not a valid JSON object: at byte offset 14: key "id" appears more than once`},
		{`{"id":"x","status":"ok"} x`, "protocol violation: response is not a valid JSON object: at byte offset 25: unexpected data after the JSON object"},
		{`{"id":"x","status":"ok","stages":[{"exit_code":1.5,"stderr":""}],"stdout":""}`, `protocol violation: response is not a valid JSON object: at byte offset 47: "1.5" is not an integer`},
		{`{"id":"x","status":"ok","stages":[],"stdout":"aG\nk="}`, "protocol violation: response is not a valid JSON object: at byte offset 46: escaped control character 0x0a at character 2 of a base64 string"},
		{`{"id":"x","status":"ok","stages":[{"exit_code":0,"stderr":"\u000daGk="}],"stdout":""}`, "protocol violation: response is not a valid JSON object: at byte offset 59: escaped control character 0x0d at character 0 of a base64 string"},
		{`{"status":"ok"}`, "protocol violation: response has no id"},
		{`{"id":"x"}`, "protocol violation: response has no status"},
		{`{"id":"x","status":"maybe"}`, `protocol violation: unknown status "maybe"`},
		{`{"id":"x","status":"ok","stages":[{"stderr":""}],"stdout":""}`, "protocol violation: stage 0 has no exit_code"},
		{`{"id":"x","status":"ok","stdout":"AAAA"}`, "protocol violation: response has stdout but no stages"},
		{`{"id":"x","status":"ok","stages":[],"stdout":"!!"}`, "protocol violation: response is not a valid JSON object: illegal base64 data at input byte 0"},
	}
	for _, tt := range tests {
		_, err := DecodeResponse([]byte(tt.line))
		if !errors.Is(err, ErrProtocol) || err.Error() != tt.want {
			t.Errorf("DecodeResponse(%s):\n got %v\nwant %s", tt.line, err, tt.want)
		}
	}
}

func TestDecodeResponseEscapedBase64(t *testing.T) {
	// A JSON encoder may escape '/' and '=' in base64; the value is the same.
	r, err := DecodeResponse([]byte(`{"id":"x","status":"ok","stages":[{"exit_code":0,"stderr":"\/w\u003d\u003d"}],"stdout":"AA\u003d="}`))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Stdout, []byte{0}) || !bytes.Equal(r.Stages[0].Stderr, []byte{0xff}) {
		t.Fatalf("got stdout %q stderr %q", r.Stdout, r.Stages[0].Stderr)
	}
}

func TestReadResponseFraming(t *testing.T) {
	if _, err := ReadResponse(strings.NewReader(`{"id":"x","status":"ok"}`)); err == nil ||
		err.Error() != "protocol violation: the response ended after 24 bytes without its trailing newline" {
		t.Errorf("no newline: %v", err)
	}
	if _, err := ReadResponse(strings.NewReader("")); err == nil ||
		err.Error() != "protocol violation: the daemon closed the connection without answering" {
		t.Errorf("empty: %v", err)
	}
	t.Run("largest response", func(t *testing.T) {
		testenv.Slow(t, "decodes a 40 MiB line")
		testenv.SkipUnderRace(t, "decodes a 40 MiB line in one goroutine: nothing for the race detector to find")
		big := make([]byte, 3*MaxOutputBytes/2)
		for i := range big {
			big[i] = byte(i)
		}
		line := encode(t, &Response{ID: "big", Status: StatusOK, Stages: []Stage{{Stderr: big[:MaxOutputBytes]}}, Stdout: big[:MaxOutputBytes]})
		got, err := ReadResponse(strings.NewReader(line + "trailing junk is not read"))
		if err != nil {
			t.Fatalf("ReadResponse of a %d-byte line: %v", len(line), err)
		}
		if !bytes.Equal(got.Stdout, big[:MaxOutputBytes]) || !bytes.Equal(got.Stages[0].Stderr, big[:MaxOutputBytes]) {
			t.Error("16 MiB stdout/stderr did not round trip")
		}
	})
}

func TestWriteResponseReportsWriteErrors(t *testing.T) {
	err := WriteResponse(failWriter{}, &Response{ID: "x", Status: StatusOK, Stages: []Stage{{}}, Stdout: make([]byte, 1<<20)})
	if err == nil || !strings.HasPrefix(err.Error(), "write response: ") {
		t.Fatalf("got %v, want a wrapped write error", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestErrorResponse(t *testing.T) {
	_, err := DecodeRequest([]byte(`{"id":"abc","pipeline":[]}`), testOpts)
	r := ErrorResponse(err)
	if r.ID != "abc" || r.Status != StatusError || r.Message != err.Error() {
		t.Errorf("ErrorResponse = %+v", r)
	}
	r = ErrorResponse(errors.New("plain"))
	if r.ID != "" || r.Message != "plain" {
		t.Errorf("ErrorResponse(plain) = %+v", r)
	}
}

// BenchmarkWriteResponse measures what encoding a full-size response costs.
// The figure that matters is B/op against the 16 MiB of raw output: the
// encoder must not hold the JSON line in memory.
func BenchmarkWriteResponse(b *testing.B) {
	out := bytes.Repeat([]byte("0123456789abcdef"), MaxOutputBytes/16)
	resp := &Response{ID: "bench", Status: StatusOK, Stages: []Stage{{Stderr: []byte("x")}}, Stdout: out}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteResponse(io.Discard, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWriteResponseAllocations keeps the streaming property from regressing:
// allocation is a count, not a timing, so it is stable enough to assert.
func TestWriteResponseAllocations(t *testing.T) {
	testenv.Slow(t, "encodes 32 MiB responses until the allocation figure settles")
	out := bytes.Repeat([]byte{0xab}, MaxOutputBytes)
	resp := &Response{ID: "alloc", Status: StatusOK, Stages: []Stage{{Stderr: out}}, Stdout: out}
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = WriteResponse(io.Discard, resp)
		}
	})
	perOp := res.AllocedBytesPerOp()
	if limit := int64(2 * MaxOutputBytes * 3 / 2); perOp > limit {
		t.Fatalf("WriteResponse of 2 x 16 MiB allocated %d bytes per call; the limit is 1.5 x the raw output (%d)", perOp, limit)
	}
	t.Logf("WriteResponse of 32 MiB raw output allocates %d bytes", perOp)
}
