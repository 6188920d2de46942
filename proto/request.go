package proto

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// Sentinel kinds of request errors. Every error from [ReadRequest] and
// [DecodeRequest] that is the peer's fault is a *[RequestError] whose Kind is
// one of these, so callers can test with errors.Is.
var (
	// ErrEmpty: the peer closed the connection without sending a byte.
	ErrEmpty = errors.New("empty request")
	// ErrTooLarge: no '\n' within MaxRequestBytes.
	ErrTooLarge = errors.New("request too large")
	// ErrMissingNewline: the peer closed after a partial line.
	ErrMissingNewline = errors.New("missing trailing newline")
	// ErrSyntax: the line is not valid UTF-8 JSON.
	ErrSyntax = errors.New("invalid JSON")
	// ErrInvalid: well-formed JSON that is not a valid request.
	ErrInvalid = errors.New("invalid request")
)

// RequestError describes a request that was refused, precisely enough for
// the peer to fix it.
type RequestError struct {
	// Kind is one of ErrEmpty, ErrTooLarge, ErrMissingNewline, ErrSyntax or
	// ErrInvalid.
	Kind error
	// ID is the request's id when it could be read before the error, so the
	// error response can carry it; empty otherwise.
	ID string
	// Field names the offending field, e.g. "pipeline[1][0]"; empty for
	// framing and syntax errors.
	Field string
	// Detail says what was wrong.
	Detail string
}

func (e *RequestError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%v: field %q: %s", e.Kind, e.Field, e.Detail)
	}
	if e.Detail == "" {
		return e.Kind.Error()
	}
	return fmt.Sprintf("%v: %s", e.Kind, e.Detail)
}

// Unwrap returns the error's Kind.
func (e *RequestError) Unwrap() error { return e.Kind }

// IDOf returns the request id carried by err, or "" if err does not carry
// one. Error responses use it so that a client can match them.
func IDOf(err error) string {
	var re *RequestError
	if errors.As(err, &re) {
		return re.ID
	}
	return ""
}

// ReadLine reads one request line from r: the bytes up to and including the
// first '\n'. It reads at most MaxRequestBytes and never buffers more, so a
// peer cannot make the daemon hold more than that in memory. Bytes after the
// newline are left unread. I/O errors (including deadlines) are returned
// wrapped, not as *RequestError.
func ReadLine(r io.Reader) ([]byte, error) {
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= MaxRequestBytes {
				return nil, &RequestError{Kind: ErrTooLarge, Detail: fmt.Sprintf(
					"no newline within the first %d bytes; a request line, including its newline, may be at most %d bytes",
					MaxRequestBytes, MaxRequestBytes)}
			}
			grown := make([]byte, len(buf), min(2*cap(buf), MaxRequestBytes))
			copy(grown, buf)
			buf = grown
		}
		start := len(buf)
		n, err := r.Read(buf[start:cap(buf)])
		buf = buf[:start+n]
		if i := bytes.IndexByte(buf[start:], '\n'); i >= 0 {
			return buf[:start+i+1], nil
		}
		if err == io.EOF {
			if len(buf) == 0 {
				return nil, &RequestError{Kind: ErrEmpty, Detail: "the connection was closed before any byte was sent"}
			}
			return nil, &RequestError{Kind: ErrMissingNewline, Detail: fmt.Sprintf(
				"the connection was closed after %d bytes without the '\\n' that ends a request line", len(buf))}
		}
		if err != nil {
			return nil, fmt.Errorf("read request: %w", err)
		}
	}
}

// DecodeOptions controls checks that depend on the environment.
type DecodeOptions struct {
	// Now is the clock that a request's time is checked against; nil means
	// time.Now. Tests inject a fixed clock.
	Now func() time.Time
	// MaxClockSkew is how far time may be from Now in either direction;
	// zero means DefaultMaxClockSkew.
	MaxClockSkew time.Duration
}

// ReadRequest reads one line from r and decodes it with DecodeRequest.
func ReadRequest(r io.Reader, opts DecodeOptions) (*Request, error) {
	line, err := ReadLine(r)
	if err != nil {
		return nil, err
	}
	return DecodeRequest(line, opts)
}

// DecodeRequest decodes, defaults and validates one request line (with or
// without its trailing newline). On failure the error is a *RequestError.
func DecodeRequest(line []byte, opts DecodeOptions) (*Request, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	fields, err := splitObject(line)
	if err != nil {
		return nil, err
	}
	d := requestDecoder{fields: fields}
	req := d.decode(opts)
	if d.err == nil {
		// The fields the daemon reads were checked one by one, naming
		// the field; this catches keys and the fields it ignores.
		if off, esc := strictjson.LoneSurrogate(line); off >= 0 {
			d.err = &RequestError{Kind: ErrInvalid, Detail: strictjson.Describe(esc, off, "the request line")}
		}
	}
	if d.err != nil {
		d.err.ID = req.ID
		return nil, d.err
	}
	return req, nil
}

// splitObject checks that line is exactly one JSON object with no repeated
// key and returns its members undecoded (strictjson.Object, which the
// approver channel shares).
func splitObject(line []byte) (map[string]json.RawMessage, error) {
	fields, e := strictjson.Object(line)
	if e == nil {
		return fields, nil
	}
	switch e.Kind {
	case strictjson.Duplicate:
		return nil, &RequestError{Kind: ErrInvalid, Field: e.Key, Detail: e.Detail}
	case strictjson.NotObject:
		return nil, &RequestError{Kind: ErrInvalid, Detail: "the request " + e.Detail}
	case strictjson.Empty:
		return nil, &RequestError{Kind: ErrSyntax, Detail: "the request line " + e.Detail}
	case strictjson.BadUTF8:
		return nil, &RequestError{Kind: ErrSyntax, Detail: "the request " + e.Detail}
	}
	return nil, &RequestError{Kind: ErrSyntax, Detail: e.Detail}
}

// rawKind names the JSON type of a raw value for error messages.
func rawKind(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// requestDecoder decodes fields one by one and keeps the first error, so
// that decode reads as a list of fields rather than a ladder of checks.
type requestDecoder struct {
	fields map[string]json.RawMessage
	err    *RequestError
}

func (d *requestDecoder) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = &RequestError{Kind: ErrInvalid, Field: field, Detail: fmt.Sprintf(format, args...)}
	}
}

// raw returns a field's value, treating an explicit null as absent.
func (d *requestDecoder) raw(name string) (json.RawMessage, bool) {
	raw, ok := d.fields[name]
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

// character fails field when raw, its JSON text, holds an escape that is
// not a character (a lone UTF-16 surrogate), which encoding/json would
// silently turn into U+FFFD.
func (d *requestDecoder) character(field string, raw json.RawMessage) bool {
	if off, esc := strictjson.LoneSurrogate(raw); off >= 0 {
		d.fail(field, "%s", strictjson.Describe(esc, off, "its JSON text"))
		return false
	}
	return true
}

func (d *requestDecoder) str(name string, maxLen int) string {
	raw, ok := d.raw(name)
	if !ok || d.err != nil {
		return ""
	}
	if !d.character(name, raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		d.fail(name, "must be a string, got %s", rawKind(raw))
		return ""
	}
	if len(s) > maxLen {
		d.fail(name, "is %d bytes long; at most %d are allowed", len(s), maxLen)
		return ""
	}
	if strings.IndexByte(s, 0) >= 0 {
		d.fail(name, "contains a NUL byte")
		return ""
	}
	return s
}

func (d *requestDecoder) boolean(name string, def bool) bool {
	raw, ok := d.raw(name)
	if !ok || d.err != nil {
		return def
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		d.fail(name, "must be true or false, got %s", rawKind(raw))
		return def
	}
	return b
}

func (d *requestDecoder) decode(opts DecodeOptions) *Request {
	req := &Request{}
	req.ID = d.str("id", MaxIDLen)
	if _, given := d.raw("id"); given && d.err == nil {
		if msg := checkID(req.ID); msg != "" {
			d.fail("id", "%s", msg)
		}
	}
	if d.err != nil {
		req.ID = "" // an id we refused must not be echoed back
		return req
	}
	if req.ID == "" {
		req.ID = uuid.NewString()
	}

	req.Action = d.str("action", 32)
	switch req.Action {
	case "", ActionExecute, ActionExec:
		req.Action = ActionExecute
	case ActionPing, ActionStop:
	default:
		if d.err == nil {
			d.fail("action", "unknown action %q; known actions are %q (or %q), %q and %q", req.Action, ActionExecute, ActionExec, ActionPing, ActionStop)
		}
	}
	req.Host = d.str("host", MaxHostLen)
	req.Session = d.str("session", MaxSessionLen)
	req.Reason = d.str("reason", MaxReasonLen)
	req.Time = d.time(opts)
	req.Privileged = d.boolean("privileged", true)
	req.ForwardAgent = d.boolean("forward_agent", false)
	if req.ForwardAgent && req.Privileged {
		d.fail("forward_agent", `true is only valid with "privileged": false; the SSH agent is never given to privileged commands`)
	}
	req.Cwd = d.str("cwd", MaxCwdLen)
	if _, given := d.raw("cwd"); given && d.err == nil && !strings.HasPrefix(req.Cwd, "/") {
		d.fail("cwd", "must be an absolute path, got %q", req.Cwd)
	}
	req.Env = d.env()
	req.Stdin = d.stdin()
	req.Progress = d.boolean("progress", false)
	req.NonInteractive = d.boolean("non_interactive", false)
	if req.Action != ActionExecute {
		// sudo-proxy 1.1 clients send control actions with "pipeline": [].
		if raw, given := d.raw("pipeline"); given && d.err == nil && string(bytes.TrimSpace(raw)) != "[]" {
			d.fail("pipeline", "must be absent or [] in a %s request", req.Action)
		}
		if req.Stdin != nil && d.err == nil {
			d.fail("stdin", "must be absent in a %s request", req.Action)
		}
	} else {
		req.Pipeline = d.pipeline()
	}
	return req
}

// stdin decodes the stdin extension: standard padded base64 of at most
// MaxStdinBytes bytes. Empty means absent.
func (d *requestDecoder) stdin() []byte {
	raw, ok := d.raw("stdin")
	if !ok || d.err != nil {
		return nil
	}
	if !d.character("stdin", raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		d.fail("stdin", "must be a base64 string, got %s", rawKind(raw))
		return nil
	}
	// Go's base64 decoder skips '\r' and '\n' even in strict mode; JSON
	// forbids them raw in a string, but an escape ("\n") unquotes to them.
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		d.fail("stdin", "is not standard padded base64: character %d of the decoded string is %q (sent escaped); base64 has no line breaks here", i, s[i])
		return nil
	}
	// Decoding before the size check allocates at most three quarters of
	// what the line already holds, and one check of the decoded length is
	// exact whatever MaxStdinBytes is.
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		d.fail("stdin", "is not standard padded base64: %v", err)
		return nil
	}
	if len(b) > MaxStdinBytes {
		d.fail("stdin", "decodes to more than %d bytes, the most a request can carry", MaxStdinBytes)
		return nil
	}
	if len(b) == 0 {
		return nil
	}
	return b
}

// checkID returns why a client-chosen id is refused, or "" if it is fine.
// Ids are restricted to printable ASCII because they are shown to the
// approver and written to logs, where a control character could mislead.
func checkID(id string) string {
	if id == "" {
		return "must not be empty; omit the field to have the daemon choose one"
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return fmt.Sprintf("must be printable ASCII without spaces; byte %d is 0x%02x", i, id[i])
		}
	}
	return ""
}

func (d *requestDecoder) time(opts DecodeOptions) time.Time {
	if d.err != nil {
		return time.Time{}
	}
	if _, ok := d.raw("time"); !ok {
		d.fail("time", "is required: send the current time as an RFC 3339 timestamp, e.g. %q", "2026-02-13T14:30:00Z")
		return time.Time{}
	}
	s := d.str("time", 64)
	if d.err != nil {
		return time.Time{}
	}
	if s == "" {
		d.fail("time", "must not be empty: send the current time as an RFC 3339 timestamp, e.g. %q", "2026-02-13T14:30:00Z")
		return time.Time{}
	}
	t, err := parseRFC3339(s)
	if err != nil {
		d.fail("time", "%q is not an RFC 3339 timestamp (e.g. %q or %q): %v", s, "2026-02-13T14:30:00Z", "2026-02-13T15:30:00.25+01:00", err)
		return time.Time{}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	skew := opts.MaxClockSkew
	if skew <= 0 {
		skew = DefaultMaxClockSkew
	}
	// Compared as instants, never through now.Sub(t): a time.Duration
	// saturates about 292 years away, and a saturated difference must not
	// pass for a small one.
	n := now()
	switch {
	case t.Before(n.Add(-skew)):
		d.fail("time", "%s is %s older than the daemon's clock; at most %s of clock skew is allowed, so send the current time", s, distance(n, t), skew)
	case t.After(n.Add(skew)):
		d.fail("time", "%s is %s ahead of the daemon's clock; at most %s of clock skew is allowed, so send the current time", s, distance(t, n), skew)
	}
	return t
}

// distance says how far later is after earlier, rounded to the
// millisecond, or that it is more than a time.Duration can hold.
func distance(later, earlier time.Time) string {
	if later.After(earlier.Add(time.Duration(1<<63 - 1))) {
		return "more than 292 years"
	}
	return later.Sub(earlier).Round(time.Millisecond).String()
}

func (d *requestDecoder) env() map[string]string {
	raw, ok := d.raw("env")
	if !ok || d.err != nil {
		return map[string]string{}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		d.fail("env", "must be an object of string values, got %s", rawKind(raw))
		return nil
	}
	env := map[string]string{}
	total := 0
	for dec.More() {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			d.fail("env", "malformed object: %v", err)
			return nil
		}
		if off, esc := strictjson.LoneSurrogate(raw[before:dec.InputOffset()]); off >= 0 {
			d.fail("env", "a variable name: %s", strictjson.Describe(esc, int(before)+off, "its JSON text"))
			return nil
		}
		key := tok.(string)
		if len(env) == MaxEnvVars {
			d.fail("env", "has more than %d variables; this daemon accepts at most %d", MaxEnvVars, MaxEnvVars)
			return nil
		}
		if len(key) > MaxEnvNameLen {
			d.fail("env", "a variable name is %d bytes long; this daemon accepts names of at most %d bytes", len(key), MaxEnvNameLen)
			return nil
		}
		field := "env." + key
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			d.fail(field, "malformed value: %v", err)
			return nil
		}
		if _, dup := env[key]; dup {
			d.fail(field, "appears more than once; each key may appear only once")
			return nil
		}
		if !ValidEnvName(key) {
			d.fail("env", "%q is not a valid variable name: names match [A-Za-z_][A-Za-z0-9_]*", key)
			return nil
		}
		if !d.character(field, v) {
			return nil
		}
		var s string
		if isNull(v) || json.Unmarshal(v, &s) != nil {
			d.fail(field, "must be a string, got %s", rawKind(v))
			return nil
		}
		if strings.IndexByte(s, 0) >= 0 {
			d.fail(field, "contains a NUL byte, which an environment variable cannot carry")
			return nil
		}
		if total += len(key) + len(s); total > MaxEnvBytes {
			d.fail("env", "names and values total more than %d bytes; this daemon accepts at most %d", MaxEnvBytes, MaxEnvBytes)
			return nil
		}
		env[key] = s
	}
	return env
}

// ValidEnvName reports whether name matches [A-Za-z_][A-Za-z0-9_]*: the one
// check of a variable name, for requests, the configuration and the rules.
// Such a name holds no '=', ',' or NUL, which sudo's --preserve-env list
// (package internal/runner) would misread.
func ValidEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func (d *requestDecoder) pipeline() [][]string {
	if d.err != nil {
		return nil
	}
	raw, ok := d.raw("pipeline")
	if !ok {
		d.fail("pipeline", `is required: a list of stages, each a list of strings, e.g. [["apt", "install", "nginx"]]`)
		return nil
	}
	var stages []json.RawMessage
	if json.Unmarshal(raw, &stages) != nil {
		d.fail("pipeline", "must be an array of stages, got %s", rawKind(raw))
		return nil
	}
	if len(stages) == 0 {
		d.fail("pipeline", "must have at least one stage")
		return nil
	}
	if len(stages) > MaxStages {
		d.fail("pipeline", "has %d stages; at most %d are allowed", len(stages), MaxStages)
		return nil
	}
	out := make([][]string, len(stages))
	for i, rawStage := range stages {
		var args []json.RawMessage
		if isNull(rawStage) || json.Unmarshal(rawStage, &args) != nil {
			d.fail(fmt.Sprintf("pipeline[%d]", i), "must be an array of strings (an argv), got %s", rawKind(rawStage))
			return nil
		}
		if len(args) == 0 {
			d.fail(fmt.Sprintf("pipeline[%d]", i), "must not be empty: a stage needs at least a program name")
			return nil
		}
		argv := make([]string, len(args))
		for j, rawArg := range args {
			field := fmt.Sprintf("pipeline[%d][%d]", i, j)
			if !d.character(field, rawArg) {
				return nil
			}
			if isNull(rawArg) || json.Unmarshal(rawArg, &argv[j]) != nil {
				d.fail(field, "must be a string, got %s", rawKind(rawArg))
				return nil
			}
			if strings.IndexByte(argv[j], 0) >= 0 {
				d.fail(field, "contains a NUL byte, which an argument cannot carry")
				return nil
			}
		}
		if argv[0] == "" {
			d.fail(fmt.Sprintf("pipeline[%d][0]", i), "the program name must not be empty")
			return nil
		}
		out[i] = argv
	}
	return out
}

// requestWire is the JSON shape of a request as a client sends it.
type requestWire struct {
	ID           string            `json:"id"`
	Action       string            `json:"action,omitempty"`
	Host         string            `json:"host"`
	Session      string            `json:"session"`
	Time         string            `json:"time"`
	Pipeline     [][]string        `json:"pipeline,omitempty"`
	Env          map[string]string `json:"env"`
	Reason       string            `json:"reason"`
	Privileged   bool              `json:"privileged"`
	ForwardAgent bool              `json:"forward_agent"`
	Cwd          string            `json:"cwd,omitempty"`
	Stdin        []byte            `json:"stdin,omitempty"`
	Progress     bool              `json:"progress,omitempty"`
	// NonInteractive is Request.NonInteractive (extension).
	NonInteractive bool `json:"non_interactive,omitempty"`
}

// MarshalJSON encodes r as a client sends it: every field explicit (so the
// daemon's defaults never decide for the client), time in whole seconds of
// UTC ("2026-02-13T14:30:00Z", the only form the protocol's origin,
// sudo-proxy, accepts), and the extension fields only when set. An execute action is
// left implicit so that requests stay within the reference protocol.
func (r *Request) MarshalJSON() ([]byte, error) {
	w := requestWire{
		ID: r.ID, Host: r.Host, Session: r.Session, Pipeline: r.Pipeline,
		Env: r.Env, Reason: r.Reason, Privileged: r.Privileged,
		ForwardAgent: r.ForwardAgent, Cwd: r.Cwd, Stdin: r.Stdin, Progress: r.Progress,
		NonInteractive: r.NonInteractive,
	}
	if r.Action != ActionExecute {
		w.Action = r.Action
	}
	if !r.Time.IsZero() {
		w.Time = r.Time.UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	if w.Env == nil {
		w.Env = map[string]string{}
	}
	return json.Marshal(w)
}
