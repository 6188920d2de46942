package proto

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// fixedNow is the clock every decoding test runs against.
var fixedNow = time.Date(2026, 2, 13, 14, 30, 0, 0, time.UTC)

var testOpts = DecodeOptions{Now: func() time.Time { return fixedNow }}

const okTime = `"time":"2026-02-13T14:30:00Z"`

func TestDecodeRequestReferenceExample(t *testing.T) {
	// The request example of docs/protocol.md, indented.
	line := `{
  "id": "550e8400-e29b-41d4-a716-446655440000",
  "host": "workstation.local",
  "session": "claude-code-project-alpha",
  "time": "2026-02-13T14:30:00Z",
  "pipeline": [["apt", "install", "nginx"]],
  "env": {"DEBIAN_FRONTEND": "noninteractive"},
  "reason": "Install nginx to set up a web server",
  "privileged": true,
  "forward_agent": false
}`
	// The reference shows it pretty-printed; on the wire it is one line.
	line = strings.ReplaceAll(line, "\n", "") + "\n"
	req, err := ReadRequest(strings.NewReader(line), testOpts)
	if err != nil {
		t.Fatalf("ReadRequest: %v", err)
	}
	want := Request{
		ID: "550e8400-e29b-41d4-a716-446655440000", Action: ActionExecute,
		Host: "workstation.local", Session: "claude-code-project-alpha",
		Time: fixedNow, Pipeline: [][]string{{"apt", "install", "nginx"}},
		Env:    map[string]string{"DEBIAN_FRONTEND": "noninteractive"},
		Reason: "Install nginx to set up a web server", Privileged: true,
	}
	assertRequest(t, req, &want)
}

func assertRequest(t *testing.T, got, want *Request) {
	t.Helper()
	if got.ID != want.ID || got.Action != want.Action || got.Host != want.Host ||
		got.Session != want.Session || !got.Time.Truncate(time.Second).Equal(want.Time.Truncate(time.Second)) || got.Reason != want.Reason ||
		got.Privileged != want.Privileged || got.ForwardAgent != want.ForwardAgent || got.Cwd != want.Cwd ||
		!bytes.Equal(got.Stdin, want.Stdin) {
		t.Errorf("scalar fields:\n got %+v\nwant %+v", *got, *want)
	}
	if len(got.Pipeline) != len(want.Pipeline) {
		t.Fatalf("pipeline: got %q, want %q", got.Pipeline, want.Pipeline)
	}
	for i := range want.Pipeline {
		if strings.Join(got.Pipeline[i], "\x00") != strings.Join(want.Pipeline[i], "\x00") {
			t.Errorf("pipeline[%d]: got %q, want %q", i, got.Pipeline[i], want.Pipeline[i])
		}
	}
	if len(got.Env) != len(want.Env) {
		t.Errorf("env: got %q, want %q", got.Env, want.Env)
	}
	for k, v := range want.Env {
		if got.Env[k] != v {
			t.Errorf("env[%s]: got %q, want %q", k, got.Env[k], v)
		}
	}
}

func TestDecodeRequestDefaults(t *testing.T) {
	req, err := DecodeRequest([]byte(`{`+okTime+`,"pipeline":[["true"]]}`+"\n"), testOpts)
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	if u, err := uuid.Parse(req.ID); err != nil || u.Version() != 4 {
		t.Errorf("default id %q is not a UUIDv4 (err %v)", req.ID, err)
	}
	if !req.Privileged {
		t.Error("privileged defaulted to false, want true")
	}
	if req.ForwardAgent {
		t.Error("forward_agent defaulted to true, want false")
	}
	if req.Env == nil || len(req.Env) != 0 {
		t.Errorf("env defaulted to %#v, want empty map", req.Env)
	}
	if req.Action != ActionExecute || req.Host != "" || req.Session != "" || req.Reason != "" || req.Cwd != "" {
		t.Errorf("string defaults not empty: %+v", *req)
	}
	again, _ := DecodeRequest([]byte(`{`+okTime+`,"pipeline":[["true"]]}`), testOpts)
	if again.ID == req.ID {
		t.Errorf("two requests without id got the same default id %q", req.ID)
	}
}

func TestDecodeRequestAccepts(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Request
	}{
		{"null means absent", `{"id":null,"privileged":null,"env":null,"host":null,` + okTime + `,"pipeline":[["a"]]}`,
			Request{Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"a"}}}},
		{"unknown fields ignored", `{"id":"x","future":{"a":[1,2]},"flag":true,` + okTime + `,"pipeline":[["a"]]}`,
			Request{ID: "x", Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"a"}}}},
		{"pipeline of three", `{"id":"p",` + okTime + `,"pipeline":[["a","-x"],["b"],["c","","d"]]}`,
			Request{ID: "p", Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"a", "-x"}, {"b"}, {"c", "", "d"}}}},
		{"unprivileged forward_agent", `{"id":"f",` + okTime + `,"pipeline":[["ssh-add","-l"]],"privileged":false,"forward_agent":true}`,
			Request{ID: "f", Action: ActionExecute, Time: fixedNow, Pipeline: [][]string{{"ssh-add", "-l"}}, ForwardAgent: true}},
		{"fractional seconds and offset", `{"id":"t","time":"2026-02-13T15:30:00.123456789+01:00","pipeline":[["a"]]}`,
			Request{ID: "t", Action: ActionExecute, Time: fixedNow.Add(123456789), Privileged: true, Pipeline: [][]string{{"a"}}}},
		{"time at the edge of the skew", `{"id":"t","time":"2026-02-13T14:29:00Z","pipeline":[["a"]]}`,
			Request{ID: "t", Action: ActionExecute, Time: fixedNow.Add(-time.Minute), Privileged: true, Pipeline: [][]string{{"a"}}}},
		{"cwd and unicode args", `{"id":"c",` + okTime + `,"cwd":"/srv/app","pipeline":[["echo","h\u00e9llo","日本"]]}`,
			Request{ID: "c", Action: ActionExecute, Time: fixedNow, Privileged: true, Cwd: "/srv/app", Pipeline: [][]string{{"echo", "héllo", "日本"}}}},
		{"ping", `{"action":"ping","id":"q",` + okTime + `}`,
			Request{ID: "q", Action: ActionPing, Time: fixedNow, Privileged: true}},
		{"explicit execute", `{"action":"execute","id":"e",` + okTime + `,"pipeline":[["a"]]}`,
			Request{ID: "e", Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"a"}}}},
		{"crlf and spaces around the object", ` {"id":"w",` + okTime + `,"pipeline":[["a"]]} ` + "\r",
			Request{ID: "w", Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"a"}}}},
		{"env", `{"id":"v",` + okTime + `,"pipeline":[["a"]],"env":{"LANG":"C.UTF-8","_x1":""}}`,
			Request{ID: "v", Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"a"}}, Env: map[string]string{"LANG": "C.UTF-8", "_x1": ""}}},
		{"a surrogate pair and an escaped backslash", `{"id":"u",` + okTime + `,"pipeline":[["echo","\ud83d\ude00","\\ud800"]]}`,
			Request{ID: "u", Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"echo", "\U0001F600", `\ud800`}}}},
		{"stdin null is absent", `{"id":"s",` + okTime + `,"pipeline":[["a"]],"stdin":null}`,
			Request{ID: "s", Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"a"}}}},
		{"stdin empty is absent", `{"id":"s",` + okTime + `,"pipeline":[["a"]],"stdin":""}`,
			Request{ID: "s", Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"a"}}}},
		{"stdin at the limit", `{"id":"s",` + okTime + `,"pipeline":[["tee","/etc/x"]],"stdin":"` + strings.Repeat("AAAA", MaxStdinBytes/3) + `"}`,
			Request{ID: "s", Action: ActionExecute, Time: fixedNow, Privileged: true, Pipeline: [][]string{{"tee", "/etc/x"}}, Stdin: make([]byte, MaxStdinBytes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tt.line+"\n"), testOpts)
			if err != nil {
				t.Fatalf("DecodeRequest(%s): %v", tt.line, err)
			}
			if tt.want.ID == "" {
				tt.want.ID = got.ID // generated
			}
			assertRequest(t, got, &tt.want)
		})
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name   string
		line   string
		kind   error
		want   string // the exact error text
		wantID string // id the error must carry
	}{
		{"not an object", `[1,2]`, ErrInvalid, "invalid request: the request must be a JSON object, got an array", ""},
		{"a string", `"hi"`, ErrInvalid, "invalid request: the request must be a JSON object, got a string", ""},
		{"a number", `12`, ErrInvalid, "invalid request: the request must be a JSON object, got a number", ""},
		{"null", `null`, ErrInvalid, "invalid request: the request must be a JSON object, got null", ""},
		{"empty line", ``, ErrSyntax, "invalid JSON: the request line is empty; send one JSON object", ""},
		{"bad json", `{"id":"x",}`, ErrSyntax, "invalid JSON: at byte offset 10: invalid character '}' looking for beginning of object key string", ""},
		{"cut json", `{"id":"x"`, ErrSyntax, "invalid JSON: unexpected end of input at byte offset 9: the JSON object is not complete", ""},
		{"trailing data", `{"id":"x",` + okTime + `,"pipeline":[["a"]]} {}`, ErrSyntax, "invalid JSON: unexpected data after the JSON object at offset 59; send exactly one object per line", ""},
		{"lone surrogate in an argument", `{"id":"x",` + okTime + `,"pipeline":[["rm","/tmp/\ud800x"]]}`, ErrInvalid, `invalid request: field "pipeline[0][1]": the escape \ud800 at byte 6 of its JSON text is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair`, "x"},
		{"lone low surrogate in a program", `{"id":"x",` + okTime + `,"pipeline":[["a"],["\udc00"]]}`, ErrInvalid, `invalid request: field "pipeline[1][0]": the escape \udc00 at byte 1 of its JSON text is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair`, "x"},
		{"lone surrogate in an env value", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":{"A":"\uD800"}}`, ErrInvalid, `invalid request: field "env.A": the escape \uD800 at byte 1 of its JSON text is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair`, "x"},
		{"lone surrogate in an env name", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":{"A":"","B\ud800":""}}`, ErrInvalid, `invalid request: field "env": a variable name: the escape \ud800 at byte 10 of its JSON text is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair`, "x"},
		{"lone surrogate in the reason", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"reason":"ok \ud800\u0041"}`, ErrInvalid, `invalid request: field "reason": the escape \ud800 at byte 4 of its JSON text is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair`, "x"},
		{"lone surrogate in the id", `{"id":"x\ud800",` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "id": the escape \ud800 at byte 2 of its JSON text is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair`, ""},
		{"lone surrogate in session", `{"id":"x","session":"\udfff",` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "session": the escape \udfff at byte 1 of its JSON text is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair`, "x"},
		{"lone surrogate in an unknown field", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"future":["\ud800"]}`, ErrInvalid, `invalid request: the escape \ud800 at byte 70 of the request line is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair`, "x"},
		{"lone surrogate in a key", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"\ud800":1}`, ErrInvalid, `invalid request: the escape \ud800 at byte 60 of the request line is half of a UTF-16 surrogate pair, not a character (a JSON decoder would replace it with U+FFFD); send the character itself or its complete pair`, "x"},
		{"invalid utf-8", "{\"id\":\"x\xff\"}", ErrSyntax, "invalid JSON: the request is not valid UTF-8 (first bad byte at offset 8)", ""},
		{"duplicate key", `{"id":"x","pipeline":[["a"]],"pipeline":[["b"]]}`, ErrInvalid, `invalid request: field "pipeline": appears more than once; each key may appear only once`, ""},
		{"duplicate env key", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":{"TZ":"a","TZ":"b"}}`, ErrInvalid, `invalid request: field "env.TZ": appears more than once; each key may appear only once`, "x"},

		{"id number", `{"id":5,` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "id": must be a string, got a number`, ""},
		{"id empty", `{"id":"",` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "id": must not be empty; omit the field to have the daemon choose one`, ""},
		{"id too long", `{"id":"` + long(129) + `",` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "id": is 129 bytes long; at most 128 are allowed`, ""},
		{"id control char", `{"id":"a\u001b[2J",` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "id": must be printable ASCII without spaces; byte 1 is 0x1b`, ""},
		{"id space", `{"id":"a b",` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "id": must be printable ASCII without spaces; byte 1 is 0x20`, ""},

		{"time missing", `{"id":"x","pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "time": is required: send the current time as an RFC 3339 timestamp, e.g. "2026-02-13T14:30:00Z"`, "x"},
		{"time null", `{"id":"x","time":null,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "time": is required: send the current time as an RFC 3339 timestamp, e.g. "2026-02-13T14:30:00Z"`, "x"},
		{"time empty", `{"id":"x","time":"","pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "time": must not be empty: send the current time as an RFC 3339 timestamp, e.g. "2026-02-13T14:30:00Z"`, "x"},
		{"time number", `{"id":"x","time":1770993000,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "time": must be a string, got a number`, "x"},
		{"time no zone", `{"id":"x","time":"2026-02-13T14:30:00","pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "time": "2026-02-13T14:30:00" is not an RFC 3339 timestamp (e.g. "2026-02-13T14:30:00Z" or "2026-02-13T15:30:00.25+01:00"): at byte 19: want the time zone: "Z" or an offset such as "+01:00"`, "x"},
		{"time garbage", `{"id":"x","time":"yesterday","pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "time": "yesterday" is not an RFC 3339 timestamp (e.g. "2026-02-13T14:30:00Z" or "2026-02-13T15:30:00.25+01:00"): at byte 0: want 4 digits for the year`, "x"},
		{"time stale", `{"id":"x","time":"2026-02-13T14:28:59Z","pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "time": 2026-02-13T14:28:59Z is 1m1s older than the daemon's clock; at most 1m0s of clock skew is allowed, so send the current time`, "x"},
		{"time future", `{"id":"x","time":"2026-02-13T14:31:00.5Z","pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "time": 2026-02-13T14:31:00.5Z is 1m0.5s ahead of the daemon's clock; at most 1m0s of clock skew is allowed, so send the current time`, "x"},

		{"pipeline missing", `{"id":"x",` + okTime + `}`, ErrInvalid, `invalid request: field "pipeline": is required: a list of stages, each a list of strings, e.g. [["apt", "install", "nginx"]]`, "x"},
		{"pipeline not array", `{"id":"x",` + okTime + `,"pipeline":"ls"}`, ErrInvalid, `invalid request: field "pipeline": must be an array of stages, got a string`, "x"},
		{"pipeline empty", `{"id":"x",` + okTime + `,"pipeline":[]}`, ErrInvalid, `invalid request: field "pipeline": must have at least one stage`, "x"},
		{"pipeline too long", `{"id":"x",` + okTime + `,"pipeline":[` + strings.Repeat(`["a"],`, 32) + `["a"]]}`, ErrInvalid, `invalid request: field "pipeline": has 33 stages; at most 32 are allowed`, "x"},
		{"flat argv", `{"id":"x",` + okTime + `,"pipeline":["ls","-l"]}`, ErrInvalid, `invalid request: field "pipeline[0]": must be an array of strings (an argv), got a string`, "x"},
		{"stage null", `{"id":"x",` + okTime + `,"pipeline":[["a"],null]}`, ErrInvalid, `invalid request: field "pipeline[1]": must be an array of strings (an argv), got null`, "x"},
		{"stage empty", `{"id":"x",` + okTime + `,"pipeline":[["a"],[]]}`, ErrInvalid, `invalid request: field "pipeline[1]": must not be empty: a stage needs at least a program name`, "x"},
		{"arg number", `{"id":"x",` + okTime + `,"pipeline":[["head","-n",5]]}`, ErrInvalid, `invalid request: field "pipeline[0][2]": must be a string, got a number`, "x"},
		{"arg null", `{"id":"x",` + okTime + `,"pipeline":[["a",null]]}`, ErrInvalid, `invalid request: field "pipeline[0][1]": must be a string, got null`, "x"},
		{"program empty", `{"id":"x",` + okTime + `,"pipeline":[["a"],["","x"]]}`, ErrInvalid, `invalid request: field "pipeline[1][0]": the program name must not be empty`, "x"},
		{"NUL in arg", `{"id":"x",` + okTime + `,"pipeline":[["a","b\u0000c"]]}`, ErrInvalid, `invalid request: field "pipeline[0][1]": contains a NUL byte, which an argument cannot carry`, "x"},
		{"ping with pipeline", `{"id":"x","action":"ping",` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "pipeline": must be absent or [] in a ping request`, "x"},
		{"stop with pipeline", `{"id":"x","action":"stop",` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "pipeline": must be absent or [] in a stop request`, "x"},
		{"ping with stdin", `{"id":"x","action":"ping",` + okTime + `,"stdin":"aGk="}`, ErrInvalid, `invalid request: field "stdin": must be absent in a ping request`, "x"},
		{"unknown action", `{"id":"x","action":"approve",` + okTime + `,"pipeline":[["a"]]}`, ErrInvalid, `invalid request: field "action": unknown action "approve"; known actions are "execute" (or "exec"), "ping" and "stop"`, "x"},
		{"stdin not a string", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"stdin":[1]}`, ErrInvalid, `invalid request: field "stdin": must be a base64 string, got an array`, "x"},
		{"stdin not base64", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"stdin":"aGk"}`, ErrInvalid, `invalid request: field "stdin": is not standard padded base64: illegal base64 data at input byte 0`, "x"},
		{"stdin url alphabet", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"stdin":"-_8="}`, ErrInvalid, `invalid request: field "stdin": is not standard padded base64: illegal base64 data at input byte 0`, "x"},
		{"stdin with an escaped LF", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"stdin":"aG\nk="}`, ErrInvalid, `invalid request: field "stdin": is not standard padded base64: character 2 of the decoded string is '\n' (sent escaped); base64 has no line breaks here`, "x"},
		{"stdin with an escaped CR", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"stdin":"\u000daGk="}`, ErrInvalid, `invalid request: field "stdin": is not standard padded base64: character 0 of the decoded string is '\r' (sent escaped); base64 has no line breaks here`, "x"},
		{"stdin over the limit", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"stdin":"` + strings.Repeat("AAAA", MaxStdinBytes/3+1) + `"}`, ErrInvalid, `invalid request: field "stdin": decodes to more than 737280 bytes, the most a request can carry`, "x"},

		{"env not object", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":["A=b"]}`, ErrInvalid, `invalid request: field "env": must be an object of string values, got an array`, "x"},
		{"env bad name", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":{"1A":"b"}}`, ErrInvalid, `invalid request: field "env": "1A" is not a valid variable name: names match [A-Za-z_][A-Za-z0-9_]*`, "x"},
		{"env name with =", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":{"A=B":"b"}}`, ErrInvalid, `invalid request: field "env": "A=B" is not a valid variable name: names match [A-Za-z_][A-Za-z0-9_]*`, "x"},
		{"env empty name", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":{"":"b"}}`, ErrInvalid, `invalid request: field "env": "" is not a valid variable name: names match [A-Za-z_][A-Za-z0-9_]*`, "x"},
		{"env value number", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":{"TZ":1}}`, ErrInvalid, `invalid request: field "env.TZ": must be a string, got a number`, "x"},
		{"env value null", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":{"TZ":null}}`, ErrInvalid, `invalid request: field "env.TZ": must be a string, got null`, "x"},
		{"env NUL", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":{"TZ":"a\u0000"}}`, ErrInvalid, `invalid request: field "env.TZ": contains a NUL byte, which an environment variable cannot carry`, "x"},

		{"privileged string", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"privileged":"false"}`, ErrInvalid, `invalid request: field "privileged": must be true or false, got a string`, "x"},
		{"forward_agent number", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"forward_agent":1}`, ErrInvalid, `invalid request: field "forward_agent": must be true or false, got a number`, "x"},
		{"forward_agent privileged", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"forward_agent":true}`, ErrInvalid, `invalid request: field "forward_agent": true is only valid with "privileged": false; the SSH agent is never given to privileged commands`, "x"},
		{"forward_agent explicit privileged", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"forward_agent":true,"privileged":true}`, ErrInvalid, `invalid request: field "forward_agent": true is only valid with "privileged": false; the SSH agent is never given to privileged commands`, "x"},

		{"host too long", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"host":"` + long(256) + `"}`, ErrInvalid, `invalid request: field "host": is 256 bytes long; at most 255 are allowed`, "x"},
		{"session too long", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"session":"` + long(257) + `"}`, ErrInvalid, `invalid request: field "session": is 257 bytes long; at most 256 are allowed`, "x"},
		{"reason too long", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"reason":"` + long(4097) + `"}`, ErrInvalid, `invalid request: field "reason": is 4097 bytes long; at most 4096 are allowed`, "x"},
		{"session object", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"session":{}}`, ErrInvalid, `invalid request: field "session": must be a string, got an object`, "x"},
		{"reason NUL", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"reason":"\u0000"}`, ErrInvalid, `invalid request: field "reason": contains a NUL byte`, "x"},
		{"cwd relative", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"cwd":"src"}`, ErrInvalid, `invalid request: field "cwd": must be an absolute path, got "src"`, "x"},
		{"cwd empty", `{"id":"x",` + okTime + `,"pipeline":[["a"]],"cwd":""}`, ErrInvalid, `invalid request: field "cwd": must be an absolute path, got ""`, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(tt.line+"\n"), testOpts)
			if err == nil {
				t.Fatalf("DecodeRequest(%s) = %+v, want error %q", tt.line, req, tt.want)
			}
			if req != nil {
				t.Errorf("DecodeRequest returned a request alongside error %v", err)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error %v is not %v", err, tt.kind)
			}
			if err.Error() != tt.want {
				t.Errorf("error text:\n got %s\nwant %s", err, tt.want)
			}
			if got := IDOf(err); got != tt.wantID {
				t.Errorf("IDOf(err) = %q, want %q", got, tt.wantID)
			}
		})
	}
}

func TestReadLine(t *testing.T) {
	exact := strings.Repeat(" ", MaxRequestBytes-1) + "\n"
	tests := []struct {
		name    string
		input   string
		want    string
		kind    error
		wantErr string
	}{
		{"one line", "{}\n", "{}\n", nil, ""},
		{"stops at the first newline", "{}\nmore\n", "{}\n", nil, ""},
		{"exactly the limit", exact, exact, nil, ""},
		{"one byte over", strings.Repeat(" ", MaxRequestBytes) + "\n", "", ErrTooLarge,
			"request too large: no newline within the first 1048576 bytes; a request line, including its newline, may be at most 1048576 bytes"},
		{"empty connection", "", "", ErrEmpty, "empty request: the connection was closed before any byte was sent"},
		{"valid JSON without newline", `{"time":"2026-02-13T14:30:00Z","pipeline":[["a"]]}`, "", ErrMissingNewline,
			"missing trailing newline: the connection was closed after 50 bytes without the '\\n' that ends a request line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadLine(iotestOneByteReader(tt.input))
			if tt.kind == nil {
				if err != nil || string(got) != tt.want {
					t.Fatalf("ReadLine = %d bytes, %v; want %d bytes", len(got), err, len(tt.want))
				}
				return
			}
			if !errors.Is(err, tt.kind) || err.Error() != tt.wantErr {
				t.Fatalf("ReadLine error:\n got %v\nwant %s", err, tt.wantErr)
			}
		})
	}
}

// iotestOneByteReader returns a reader that alternates one-byte and large
// reads, so ReadLine's buffer growth and newline search across reads are
// exercised.
func iotestOneByteReader(s string) io.Reader {
	return &choppyReader{r: strings.NewReader(s)}
}

type choppyReader struct {
	r *strings.Reader
	n int
}

func (c *choppyReader) Read(p []byte) (int, error) {
	c.n++
	if c.n%2 == 1 && len(p) > 1 {
		p = p[:1]
	}
	return c.r.Read(p)
}

// boundedReader fails the test if ReadLine asks for more than limit bytes in
// total: the 1 MB cap must hold without reading unbounded input.
type boundedReader struct {
	t     *testing.T
	read  int
	limit int
}

func (b *boundedReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	b.read += len(p)
	if b.read > b.limit {
		b.t.Fatalf("ReadLine read %d bytes from an endless line; the cap is %d", b.read, b.limit)
	}
	return len(p), nil
}

func TestReadLineEndlessInputIsBounded(t *testing.T) {
	br := &boundedReader{t: t, limit: MaxRequestBytes}
	_, err := ReadLine(br)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadLine of endless input: %v, want ErrTooLarge", err)
	}
}

func TestReadLineIOError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ReadLine(io.MultiReader(strings.NewReader("{"), errReader{boom}))
	if !errors.Is(err, boom) || err.Error() != "read request: boom" {
		t.Fatalf("got %v, want wrapped boom", err)
	}
	var re *RequestError
	if errors.As(err, &re) {
		t.Errorf("an I/O error must not be a RequestError: %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestRequestMarshalRoundTrip(t *testing.T) {
	in := &Request{
		ID: "rt-1", Action: ActionExecute, Host: "h", Session: "s", Time: fixedNow.Add(5 * time.Millisecond),
		Pipeline: [][]string{{"printf", "%s\n", "a\"b\\c"}, {"tr", "a-z", "A-Z"}},
		Env:      map[string]string{"LANG": "C"}, Reason: "why", Privileged: false, ForwardAgent: true, Cwd: "/tmp",
	}
	line, err := in.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(line, []byte(`"action"`)) {
		t.Errorf("execute action written explicitly: %s", line)
	}
	out, err := DecodeRequest(line, testOpts)
	if err != nil {
		t.Fatalf("DecodeRequest(%s): %v", line, err)
	}
	assertRequest(t, out, in)

	if !bytes.Contains(line, []byte(`"time":"2026-02-13T14:30:00Z"`)) {
		t.Errorf("time not sent as whole UTC seconds (the only form sudo-proxy accepts): %s", line)
	}
	withStdin := *in
	withStdin.Stdin = []byte("hello\n\x00\xff")
	line, _ = withStdin.MarshalJSON()
	if !bytes.Contains(line, []byte(`"stdin":"aGVsbG8KAP8="`)) {
		t.Errorf("stdin not sent as base64: %s", line)
	}
	out, err = DecodeRequest(line, testOpts)
	if err != nil {
		t.Fatalf("DecodeRequest(%s): %v", line, err)
	}
	assertRequest(t, out, &withStdin)

	ping := &Request{ID: "p", Action: ActionPing, Time: fixedNow}
	line, _ = ping.MarshalJSON()
	if !bytes.Contains(line, []byte(`"action":"ping"`)) || bytes.Contains(line, []byte(`"pipeline"`)) {
		t.Errorf("ping encoded as %s", line)
	}
	if _, err := DecodeRequest(line, testOpts); err != nil {
		t.Errorf("ping does not decode: %v", err)
	}
}

func TestValidEnvName(t *testing.T) {
	for name, want := range map[string]bool{
		"A": true, "_": true, "a_B9": true, "LC_ALL": true,
		"": false, "9A": false, "A-B": false, "A B": false, "É": false, "A=": false,
	} {
		if got := ValidEnvName(name); got != want {
			t.Errorf("ValidEnvName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRequestWireCarriesEveryField: every field of Request, set, survives
// MarshalJSON and DecodeRequest unchanged. The test fails on a field that
// neither of its requests sets, so that a field added to Request is added
// to its wire form (requestWire, the decoder) and here, not left behind by
// the client's encoder.
func TestRequestWireCarriesEveryField(t *testing.T) {
	now := fixedNow.Truncate(time.Second)
	root := Request{ID: "w-1", Action: ActionExecute, Host: "h", Session: "s", Time: now,
		Pipeline: [][]string{{"apt-get", "update"}, {"tee", "/tmp/x"}}, Env: map[string]string{"LANG": "C"},
		Reason: "why", Privileged: true, Cwd: "/srv", Stdin: []byte("in\x00"), Progress: true, NonInteractive: true}
	user := root
	user.ID, user.Privileged, user.ForwardAgent = "w-2", false, true
	set := map[string]bool{}
	for _, in := range []Request{root, user} {
		v := reflect.ValueOf(in)
		for i := range v.NumField() {
			if !v.Field(i).IsZero() {
				set[v.Type().Field(i).Name] = true
			}
		}
		line, err := in.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecodeRequest(line, testOpts)
		if err != nil {
			t.Fatalf("DecodeRequest(%s): %v", line, err)
		}
		if !reflect.DeepEqual(*out, in) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", line, *out, in)
		}
	}
	for f := range reflect.TypeFor[Request]().Fields() {
		if !set[f.Name] {
			t.Errorf("Request.%s is set by neither request of this test: set it, so that its wire form is checked", f.Name)
		}
	}
}
