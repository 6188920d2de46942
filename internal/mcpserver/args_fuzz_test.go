package mcpserver

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/proto"
)

// argsFuzzSeeds are execute arguments as a client sends them: valid calls,
// and the refused ones of TestMCPStrictArguments and
// TestParseArgsNotAnObject (argumentErrorTests are added too).
var argsFuzzSeeds = []string{
	`{"argv":["apt-get","update"],"reason":"refresh"}`,
	`{"argv":["apt-get","update"],"reason":"refresh","env":null,"cwd":null,"pipeline":null}`,
	`{"pipeline":[["git","pull"],["tee","/tmp/log"]],"reason":"update the checkout","env":{"LANG":"C.UTF-8"},"privileged":false,"forward_agent":true,"cwd":"/srv"}`,
	`{"argv":["tee","/etc/x"],"reason":"write a file","stdin":"line one\nline two\n"}`,
	`{"pipeline":[["sh","-c","a | b"]],"reason":"a program that takes a pipe as an argument","stdin":""}`,
	`{"argv":["echo","\u202e\u0000\ud800"],"reason":"r\u2028","env":{},"privileged":true}`,
	`{"argv":["echo","shown"],"argv":["touch","/tmp/ran"],"reason":"r"}`,
	`{"argv":["touch","/tmp/ran"],"reason":"a","reason":"b"}`,
	`{"ARGV":["touch","/tmp/ran"],"reason":"r"}`,
	`{"argv":["touch","/tmp/ran"],"Reason":"r"}`,
	`{"argv":["touch","/tmp/ran"],"reason":"r","shell":true}`,
	`{"argv":["touch","/tmp/ran"],"reason":"r","env":{"LANG":"C","LANG":"C.UTF-8"}}`,
	`{"argv":["tee","/tmp/ran"],"reason":"r","stdin":["x"]}`,
	`[1]`, `"ls"`, `{"argv":["ls"],"reason":"r"} {}`, `{`, ``, ` `, `null`, "{\"argv\":[\"\xff\"],\"reason\":\"r\"}",
}

// FuzzParseArgs checks the MCP execute tool's strict argument decoder: it
// never panics, refuses with a non-empty message and no request, and what
// it accepts satisfies every rule it states (checked here against the
// arguments as a plain JSON decoder reads them), decodes again to the same
// request when encoded back, and reaches the daemon's wire decoder
// unchanged, unless only the daemon's own limits refuse it.
func FuzzParseArgs(f *testing.F) {
	for _, s := range argsFuzzSeeds {
		f.Add([]byte(s))
	}
	for _, tt := range argumentErrorTests {
		b, err := json.Marshal(tt.args)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) <= 64<<10 { // a huge seed only slows the mutator down
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := parseArgs(raw)
		if err != nil {
			if r != nil || err.Error() == "" {
				t.Fatalf("parseArgs(%q) = %+v, %q", raw, r, err)
			}
			return
		}
		checkAccepted(t, raw, r)
		checkRoundTrip(t, raw, r)
		checkWire(t, r)
	})
}

// argKeys returns the keys of the JSON object raw, in order, repeats
// included, and those of its "env" member when that is an object.
func argKeys(t *testing.T, raw []byte) (keys, envKeys []string) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("accepted %q, which is not a JSON object", raw)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("accepted %q: %v", raw, err)
		}
		key := tok.(string)
		keys = append(keys, key)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			t.Fatalf("accepted %q: %v", raw, err)
		}
		if key == "env" && bytes.HasPrefix(bytes.TrimSpace(val), []byte("{")) {
			inner := json.NewDecoder(bytes.NewReader(val))
			if _, err := inner.Token(); err != nil {
				t.Fatal(err)
			}
			for inner.More() {
				k, _ := inner.Token()
				envKeys = append(envKeys, k.(string))
				var v json.RawMessage
				if err := inner.Decode(&v); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return keys, envKeys
}

// member decodes m[name] into v and reports whether it was given and not
// null.
func member(t *testing.T, m map[string]json.RawMessage, name string, v any) bool {
	t.Helper()
	val, ok := m[name]
	if !ok || string(bytes.TrimSpace(val)) == "null" {
		return false
	}
	if err := json.Unmarshal(val, v); err != nil {
		t.Fatalf("accepted %q whose %s does not decode as %T: %v", val, name, v, err)
	}
	return true
}

// checkAccepted checks that r, accepted from raw, satisfies the rules the
// decoder states: one JSON object in valid UTF-8 with only the schema's
// keys, each once, spelled exactly; argv or pipeline, not both, with a
// program in every stage, at most proto.MaxStages of them, and no shell
// syntax in argv; a reason that is not blank and at most
// proto.MaxReasonLen bytes; an absolute cwd; forward_agent only
// unprivileged; valid env names; stdin at most proto.MaxStdinBytes. And
// that every field of r is what the arguments said.
func checkAccepted(t *testing.T, raw []byte, r *proto.Request) {
	t.Helper()
	if !utf8.Valid(raw) || !json.Valid(raw) {
		t.Fatalf("accepted %q, which is not valid UTF-8 JSON", raw)
	}
	keys, envKeys := argKeys(t, raw)
	for i, k := range keys {
		if !slices.Contains(argNames, k) || slices.Contains(keys[:i], k) {
			t.Fatalf("accepted %q with the key %q (unknown, or repeated)", raw, k)
		}
	}
	for i, k := range envKeys {
		if slices.Contains(envKeys[:i], k) {
			t.Fatalf("accepted %q with env key %q twice", raw, k)
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}

	var argv []string
	var pipeline [][]string
	hasArgv, hasPipeline := member(t, m, "argv", &argv), member(t, m, "pipeline", &pipeline)
	switch {
	case hasArgv == hasPipeline:
		t.Fatalf("accepted %q: argv given %v, pipeline given %v", raw, hasArgv, hasPipeline)
	case hasArgv:
		if len(argv) == 0 || argv[0] == "" || len(argv) == 1 && strings.ContainsAny(argv[0], " \t") {
			t.Fatalf("accepted argv %q", argv)
		}
		for _, a := range argv {
			if _, shell := shellToken(a); shell {
				t.Fatalf("accepted argv %q, with shell syntax %q", argv, a)
			}
		}
		pipeline = [][]string{argv}
	}
	if len(pipeline) == 0 || len(pipeline) > proto.MaxStages {
		t.Fatalf("accepted a pipeline of %d stages", len(pipeline))
	}
	for _, st := range pipeline {
		if len(st) == 0 || st[0] == "" {
			t.Fatalf("accepted a stage without a program: %q", pipeline)
		}
	}
	if !reflect.DeepEqual(r.Pipeline, pipeline) {
		t.Fatalf("pipeline %q, the arguments say %q", r.Pipeline, pipeline)
	}

	var reason, cwd string
	member(t, m, "reason", &reason)
	member(t, m, "cwd", &cwd)
	if strings.TrimSpace(reason) == "" || len(reason) > proto.MaxReasonLen || r.Reason != reason {
		t.Fatalf("accepted reason %q (request has %q)", reason, r.Reason)
	}
	if cwd != "" && !filepath.IsAbs(cwd) || r.Cwd != cwd {
		t.Fatalf("accepted cwd %q (request has %q)", cwd, r.Cwd)
	}

	privileged, forward := true, false
	member(t, m, "privileged", &privileged)
	member(t, m, "forward_agent", &forward)
	if r.Privileged != privileged || r.ForwardAgent != forward || forward && privileged {
		t.Fatalf("privileged %v, forward_agent %v; the arguments say %v, %v", r.Privileged, r.ForwardAgent, privileged, forward)
	}

	var env map[string]string
	member(t, m, "env", &env)
	if len(r.Env) != len(env) || len(env) > 0 && !reflect.DeepEqual(r.Env, env) {
		t.Fatalf("env %q, the arguments say %q", r.Env, env)
	}
	for k := range r.Env {
		if !proto.ValidEnvName(k) {
			t.Fatalf("accepted env name %q", k)
		}
	}

	var stdin string
	if member(t, m, "stdin", &stdin) {
		if r.Stdin == nil || string(r.Stdin) != stdin {
			t.Fatalf("stdin %q, the arguments say %q", r.Stdin, stdin)
		}
	} else if r.Stdin != nil {
		t.Fatalf("stdin %q without a stdin argument", r.Stdin)
	}
	if len(r.Stdin) > proto.MaxStdinBytes {
		t.Fatalf("accepted %d bytes of stdin", len(r.Stdin))
	}
}

// checkRoundTrip encodes r back into arguments, in the form raw used, and
// checks that they decode to the same request.
func checkRoundTrip(t *testing.T, raw []byte, r *proto.Request) {
	t.Helper()
	args := map[string]any{
		"reason": r.Reason, "privileged": r.Privileged, "forward_agent": r.ForwardAgent, "cwd": r.Cwd,
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if v, ok := m["argv"]; ok && string(bytes.TrimSpace(v)) != "null" {
		args["argv"] = r.Pipeline[0]
	} else {
		args["pipeline"] = r.Pipeline
	}
	if r.Env != nil {
		args["env"] = r.Env
	}
	if r.Stdin != nil {
		args["stdin"] = string(r.Stdin)
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	again, err := parseArgs(b)
	if err != nil {
		t.Fatalf("%q was accepted, but encoded back as %s it is refused: %v", raw, b, err)
	}
	if !reflect.DeepEqual(again, r) {
		t.Fatalf("%q decodes to %+v; encoded back as %s, to %+v", raw, r, b, again)
	}
}

// checkWire builds the request the server sends for r, as handleExecute
// does, and decodes it with the daemon's wire decoder: it arrives with the
// same pipeline, reason, flags, cwd, env and stdin, or is refused only for
// a limit of the daemon's own (a NUL byte, the size of the environment or
// of cwd, the request cap), which the agent is then told.
func checkWire(t *testing.T, r *proto.Request) {
	t.Helper()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	req := *r
	req.ID, req.Session, req.Time = "fuzz", "s", now
	line, err := req.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	got, err := proto.DecodeRequest(append(line, '\n'), proto.DecodeOptions{Now: func() time.Time { return now }})
	if err != nil {
		msg := err.Error()
		for _, daemonOnly := range []string{"contains a NUL byte", "this daemon accepts", `field "cwd": is `} {
			if strings.Contains(msg, daemonOnly) {
				return
			}
		}
		if len(line) >= proto.MaxRequestBytes {
			return
		}
		t.Fatalf("accepted arguments make a request the daemon refuses: %v\n%s", err, line)
	}
	if !reflect.DeepEqual(got.Pipeline, r.Pipeline) || got.Reason != r.Reason || got.Privileged != r.Privileged ||
		got.ForwardAgent != r.ForwardAgent || got.Cwd != r.Cwd || len(got.Env) != len(r.Env) ||
		len(r.Env) > 0 && !reflect.DeepEqual(got.Env, r.Env) || !bytes.Equal(got.Stdin, r.Stdin) {
		t.Fatalf("sent %+v, the daemon read %+v", r, got)
	}
}

// TestArgvShellSyntax checks each shell token docs/agents.md lists: in
// the argv form it is refused with a message naming it and its place, and
// saying there is no shell; in the pipeline form it is passed on as one
// literal argument.
func TestArgvShellSyntax(t *testing.T) {
	for _, tok := range []string{"|", "||", "&&", ";", "&", ">", "1>", ">>", "<", "2>", "2>&1", "&>"} {
		argv := []string{"echo", tok, "x"}
		raw, _ := json.Marshal(map[string]any{"argv": argv, "reason": "r"})
		r, err := parseArgs(raw)
		if want := `argv[1] is "` + tok + `", which is `; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "There is no shell") {
			t.Errorf("argv %q: %+v, %v; want an error containing %q", argv, r, err, want)
		}
		raw, _ = json.Marshal(map[string]any{"pipeline": [][]string{argv}, "reason": "r"})
		if r, err := parseArgs(raw); err != nil || !reflect.DeepEqual(r.Pipeline, [][]string{argv}) {
			t.Errorf("pipeline %q: %+v, %v; want it passed on", argv, r, err)
		}
	}
	// Words that merely contain such characters are arguments.
	argv := []string{"grep", "-E", "a|b", "x>y", "2>&1x", "a&&b"}
	raw, _ := json.Marshal(map[string]any{"argv": argv, "reason": "r"})
	if r, err := parseArgs(raw); err != nil || !reflect.DeepEqual(r.Pipeline, [][]string{argv}) {
		t.Errorf("argv %q: %+v, %v", argv, r, err)
	}
}

// TestArgsRelativePathNeedsCwd: an argument that is a relative path by its
// look ("./f") is refused without cwd, which the command would otherwise
// run in (/), and accepted with it.
func TestArgsRelativePathNeedsCwd(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{"argv": []string{"touch", "./f"}, "reason": "r"})
	if r, err := parseArgs(raw); err == nil || !strings.Contains(err.Error(), `"./f" (stage 1) is a relative path, and without cwd the command runs in /`) {
		t.Errorf("touch ./f without cwd: %+v, %v; want it refused", r, err)
	}
	raw, _ = json.Marshal(map[string]any{"argv": []string{"touch", "./f"}, "reason": "r", "cwd": "/srv"})
	if r, err := parseArgs(raw); err != nil || r.Cwd != "/srv" {
		t.Errorf("touch ./f with cwd /srv: %+v, %v; want it accepted", r, err)
	}
}
