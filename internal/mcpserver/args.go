package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
)

// executeArgs is the JSON form of an execute call's arguments; see
// inputSchema.
type executeArgs struct {
	Argv         []string          `json:"argv"`
	Pipeline     [][]string        `json:"pipeline"`
	Reason       string            `json:"reason"`
	Env          map[string]string `json:"env"`
	Privileged   *bool             `json:"privileged"`
	ForwardAgent bool              `json:"forward_agent"`
	Cwd          string            `json:"cwd"`
	Stdin        *string           `json:"stdin"`
}

// argNames are the execute tool's argument names, exactly as spelled in
// inputSchema; strictObject refuses any other key.
var argNames = []string{"argv", "pipeline", "reason", "env", "privileged", "forward_agent", "cwd", "stdin"}

// shellToken reports whether arg is something only a shell understands,
// and if so what it is and what to do instead. In the argv form such
// arguments are refused: a model that writes them expects a shell, and a
// human would otherwise be asked to approve a command that cannot do what
// was meant. The pipeline form passes them on, so that a program that
// really takes such an argument can still get it.
func shellToken(arg string) (why string, ok bool) {
	switch arg {
	case "|":
		return `a pipe: give the stages as pipeline, e.g. [["dpkg", "-l"], ["grep", "nginx"]]`, true
	case "||", "&&", ";", "&":
		return "shell syntax: send each command as its own call", true
	case ">", "1>":
		return `a redirection: to write a file, end a pipeline with ["tee", "FILE"]`, true
	case ">>":
		return `a redirection: to append to a file, end a pipeline with ["tee", "-a", "FILE"]`, true
	case "<":
		return `a redirection: give the input as the stdin argument, or pass the file as an argument`, true
	case "2>&1", "2>", "&>":
		return "a redirection: stderr is always returned separately", true
	}
	return "", false
}

// parseArgs decodes and checks an execute call's arguments. Its errors
// are meant for the model: they say what is wrong and how to fix it.
func parseArgs(raw json.RawMessage) (*proto.Request, error) {
	var a executeArgs
	if len(bytes.TrimSpace(raw)) > 0 {
		// encoding/json lets the last of two equal keys win and matches
		// keys case-insensitively ("ARGV" fills argv): what a reviewer of
		// the call reads could then differ from what runs. The wire decoder
		// refuses both; so does this one, before decoding.
		if err := strictObject(raw); err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return nil, argsDecodeError(err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, errors.New("invalid arguments: expected one JSON object")
		}
	}
	r := &proto.Request{Reason: a.Reason, Env: a.Env, Privileged: true, ForwardAgent: a.ForwardAgent, Cwd: a.Cwd}
	if a.Stdin != nil {
		if len(*a.Stdin) > proto.MaxStdinBytes {
			return nil, fmt.Errorf("stdin is %d bytes; at most %d can go with one request: write the file in a place you can and copy it with [\"install\", \"-m\", \"0644\", \"/tmp/x\", \"/etc/x\"]", len(*a.Stdin), proto.MaxStdinBytes)
		}
		r.Stdin = []byte(*a.Stdin)
	}
	if a.Privileged != nil {
		r.Privileged = *a.Privileged
	}

	switch {
	case a.Argv != nil && a.Pipeline != nil:
		return nil, errors.New("give either argv (one command) or pipeline (several stages), not both")
	case a.Argv == nil && a.Pipeline == nil:
		return nil, errors.New(`no command: give argv, e.g. {"argv": ["systemctl", "restart", "nginx"], "reason": "..."}, or pipeline, e.g. {"pipeline": [["dpkg", "-l"], ["grep", "nginx"]], "reason": "..."}`)
	case a.Argv != nil:
		if err := checkArgv(a.Argv); err != nil {
			return nil, err
		}
		r.Pipeline = [][]string{a.Argv}
	default:
		if err := checkPipeline(a.Pipeline); err != nil {
			return nil, err
		}
		r.Pipeline = a.Pipeline
	}

	switch {
	case strings.TrimSpace(a.Reason) == "":
		return nil, errors.New("reason is required: say in a sentence or two why this command must run; the human who approves it reads it")
	case len(a.Reason) > proto.MaxReasonLen:
		return nil, fmt.Errorf("reason is %d bytes; at most %d are allowed: shorten it", len(a.Reason), proto.MaxReasonLen)
	case a.Cwd != "" && !filepath.IsAbs(a.Cwd):
		return nil, fmt.Errorf("cwd %q is not an absolute path: give the full path of the directory", a.Cwd)
	case a.ForwardAgent && r.Privileged:
		return nil, errors.New("forward_agent needs privileged false: the SSH agent is never given to a command that runs as root")
	}
	if stage, arg, rel := client.RelativeArg(r.Pipeline); rel && a.Cwd == "" {
		return nil, fmt.Errorf("%q (stage %d) is a relative path, and without cwd the command runs in /: give cwd, the absolute directory it is relative to, or an absolute path", arg, stage+1)
	}
	for name := range a.Env {
		if !proto.ValidEnvName(name) {
			return nil, fmt.Errorf("env: %q is not a valid variable name: names match [A-Za-z_][A-Za-z0-9_]*", name)
		}
	}
	return r, nil
}

// strictObject checks that raw is valid UTF-8 holding one JSON object whose
// keys are all in argNames, spelled exactly, each at most once, and whose
// env object (when given as an object) has no key twice.
func strictObject(raw json.RawMessage) error {
	if !utf8.Valid(raw) {
		return errors.New("invalid arguments: not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil // not an object: the decoder reports it precisely
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil // broken JSON: the decoder reports it
		}
		key, _ := tok.(string)
		switch {
		case seen[key]:
			return fmt.Errorf("invalid arguments: %q appears more than once; give each argument once", key)
		case !slices.Contains(argNames, key):
			hint := ""
			for _, n := range argNames {
				if strings.EqualFold(n, key) {
					hint = fmt.Sprintf(" (names are case-sensitive: did you mean %q?)", n)
				}
			}
			return fmt.Errorf("invalid arguments: unknown field %q%s; the execute tool takes argv or pipeline, reason, and optionally env, privileged, forward_agent, cwd and stdin", key, hint)
		}
		seen[key] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil
		}
		if key == "env" {
			if err := uniqueKeys(val); err != nil {
				return err
			}
		}
	}
	return nil
}

// uniqueKeys refuses an env object that names a variable twice.
func uniqueKeys(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("invalid arguments: env: %q appears more than once; give each variable once", key)
		}
		seen[key] = true
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil
		}
	}
	return nil
}

// checkArgv checks the argv form, which must be a command and not shell
// syntax.
func checkArgv(argv []string) error {
	if len(argv) == 0 {
		return errors.New(`argv is empty: give the program and its arguments, e.g. ["systemctl", "status", "nginx"]`)
	}
	if argv[0] == "" {
		return errors.New("argv[0], the program, is empty")
	}
	if len(argv) == 1 && strings.ContainsAny(argv[0], " \t") {
		return fmt.Errorf(`argv[0] is %q, a whole command line in one string: there is no shell, so give the program and each argument as separate strings, e.g. %s`, argv[0], splitExample(argv[0]))
	}
	for i, arg := range argv {
		if why, ok := shellToken(arg); ok {
			return fmt.Errorf("argv[%d] is %q, which is %s. There is no shell; if the program really takes %q as an argument, send the command as a one-stage pipeline", i, arg, why, arg)
		}
	}
	return nil
}

// checkPipeline checks the shape of the pipeline form.
func checkPipeline(p [][]string) error {
	switch {
	case len(p) == 0:
		return errors.New("pipeline is empty: give at least one stage, e.g. [[\"dpkg\", \"-l\"]]")
	case len(p) > proto.MaxStages:
		return fmt.Errorf("pipeline has %d stages; at most %d are allowed", len(p), proto.MaxStages)
	}
	for i, stage := range p {
		switch {
		case len(stage) == 0:
			return fmt.Errorf("pipeline[%d] is empty: each stage is an argv with at least the program", i)
		case stage[0] == "":
			return fmt.Errorf("pipeline[%d][0], the program, is empty", i)
		}
	}
	return nil
}

// splitExample shows how a command line should have been sent: as a JSON
// array of its space-separated words (a hint, not a shell parser).
func splitExample(line string) string {
	b, err := json.Marshal(strings.Fields(line))
	if err != nil {
		return `["program", "arg1", "arg2"]`
	}
	return string(b)
}

// argsDecodeError rewrites a JSON decoding error for the model.
func argsDecodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return fmt.Errorf("invalid arguments: they must be a JSON object, not a JSON %s", typeErr.Value)
	case errors.As(err, &typeErr):
		return fmt.Errorf("invalid arguments: in %s, expected %s but got a JSON %s", typeErr.Field, jsonType(typeErr.Type), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("invalid arguments: not valid JSON: %v", err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("invalid arguments: %s; the execute tool takes argv or pipeline, reason, and optionally env, privileged, forward_agent, cwd and stdin",
			strings.TrimPrefix(err.Error(), "json: "))
	}
	return fmt.Errorf("invalid arguments: %v", err)
}

// jsonType names, in JSON terms, what decodes into the Go type t, for the
// types of executeArgs.
func jsonType(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[string]():
		return "a string"
	case reflect.TypeFor[bool]():
		return "true or false"
	case reflect.TypeFor[[]string]():
		return "an array of strings"
	case reflect.TypeFor[[][]string]():
		return "an array of arrays of strings"
	case reflect.TypeFor[map[string]string]():
		return "an object whose values are strings"
	}
	return "another type"
}
