package notify

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// placeholders are the names a notifier's argument may hold between braces,
// each replaced by the waiting request's value (see [Values]), in the order
// docs/config.md lists them.
var placeholders = []string{"id", "session", "host", "user", "uid", "run_as", "command", "reason", "url", "warnings"}

// MaxNotifiers bounds the notifiers a configuration may list.
const MaxNotifiers = 8

// part is a piece of a notifier's argument: literal text, or a
// placeholder's name.
type part struct {
	lit  string
	name string
}

// template is one argument: its parts in order.
type template []part

// knownList is the placeholders as an error message lists them.
func knownList() string {
	var b strings.Builder
	for i, p := range placeholders {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString("{" + p + "}")
	}
	return b.String()
}

// parseArg reads an argument: {name} is a placeholder, {{ and }} are a
// literal brace, and any other brace is an error that says where it is
// and what to write instead.
func parseArg(s string) (template, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("%s contains a NUL byte, which no argument can hold", termtext.Esc(s))
	}
	var t template
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && strings.HasPrefix(s[i:], "{{"):
			lit.WriteByte('{')
			i++
		case c == '}' && strings.HasPrefix(s[i:], "}}"):
			lit.WriteByte('}')
			i++
		case c == '}':
			return nil, fmt.Errorf("the \"}\" at byte %d closes no placeholder; write }} for a literal }", i+1)
		case c == '{':
			end := strings.IndexByte(s[i+1:], '}')
			if end < 0 {
				return nil, fmt.Errorf("the \"{\" at byte %d is not closed; write {{ for a literal {, or a placeholder: %s", i+1, knownList())
			}
			name := s[i+1 : i+1+end]
			if !slices.Contains(placeholders, name) {
				if isName(name) {
					return nil, fmt.Errorf("unknown placeholder {%s} at byte %d; the placeholders are %s", name, i+1, knownList())
				}
				return nil, fmt.Errorf("{%s} at byte %d is not a placeholder; write {{ and }} for literal braces, or a placeholder: %s", termtext.Esc(name), i+1, knownList())
			}
			if lit.Len() > 0 {
				t = append(t, part{lit: lit.String()})
				lit.Reset()
			}
			t = append(t, part{name: name})
			i += end + 1
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 || len(t) == 0 {
		t = append(t, part{lit: lit.String()})
	}
	return t, nil
}

// isName reports whether s looks like a placeholder's name: ASCII letters
// (either case, so that {ID} is told it is unknown), digits and '_', not
// empty.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// Check validates one notifier's argument vector, the one the configuration
// calls key ("notify[1]"), and returns every problem, each naming the
// element it is about ("notify[1][2]: ..."). The program (element 0) must
// be an absolute, clean path without braces; every other element must
// parse: {name} is one of the placeholders, {{ and }} are literal
// braces, and any other brace is refused; and no placeholder may be where
// the agent's value could be read as an option or a file reference
// (checkPlacement).
func Check(key string, argv []string) error {
	if len(argv) == 0 {
		return hint.New(key+": is empty",
			`a notifier is a list whose first element is the program's absolute path, e.g. ["/usr/bin/notify-send", "agent-sudo: {session} asks", "command: {command}"]`)
	}
	var errs []error
	switch p := argv[0]; {
	case p == "":
		errs = append(errs, fmt.Errorf("%s[0] (the program) is empty; it must be an absolute path", key))
	case strings.ContainsAny(p, "{}"):
		errs = append(errs, fmt.Errorf("%s[0] (the program) %s holds a brace; the program is a fixed path, placeholders go in its arguments", key, termtext.Esc(p)))
	case strings.IndexByte(p, 0) >= 0:
		errs = append(errs, fmt.Errorf("%s[0] (the program) %s contains a NUL byte", key, termtext.Esc(p)))
	case !filepath.IsAbs(p):
		errs = append(errs, fmt.Errorf("%s[0] (the program) %q is not an absolute path; no PATH is searched for a notifier", key, p))
	case filepath.Clean(p) != p:
		errs = append(errs, fmt.Errorf("%s[0] (the program) %q is not a clean path; write %q", key, p, filepath.Clean(p)))
	}
	args := make([]template, len(argv))
	parsed := true
	for i, a := range argv[1:] {
		t, err := parseArg(a)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s[%d]: %w", key, i+1, err))
			parsed = false
		}
		args[i+1] = t
	}
	if parsed {
		for i := 1; i < len(argv); i++ {
			if err := checkPlacement(argv, args, i); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", key, i, err))
			}
		}
	}
	return errors.Join(errs...)
}

// firstPlaceholder returns the literal text before t's first placeholder
// and that placeholder's name, or ok false when t holds none.
func firstPlaceholder(t template) (prefix, name string, ok bool) {
	for _, p := range t {
		if p.name != "" {
			return prefix, p.name, true
		}
		prefix += p.lit
	}
	return prefix, "", false
}

// curlValueOptions are the curl options whose value may hold a
// placeholder: curl sends it as text, and reads a file only when the value
// starts with '@', which checkPlacement refuses. curlNamedOptions also
// read a file when the value holds an '@' before any '=', so a placeholder
// there must follow a literal '='.
var (
	curlValueOptions = []string{"-d", "--data", "--data-ascii", "--data-binary", "--data-raw", "-H", "--header", "--form-string"}
	curlNamedOptions = []string{"--data-urlencode", "--url-query"}
)

// checkPlacement refuses argument i of argv (args are their templates)
// when an agent-chosen value could start it, or be read as an option or
// as a file reference (docs/security.md, "Notifiers"):
//
//   - an argument holding a placeholder must start with literal text, and
//     that text may not start with '-' (an option, or an option's
//     attached value such as -d{reason}), '@' or '<' (a file, for curl
//     and many others);
//   - for curl (a program named curl), a placeholder may be only in the
//     value of one of curlValueOptions, in the value of --data-urlencode
//     or --url-query after a literal '=', or in an http(s) URL after its
//     host (the agent does not choose the server), and then only with -g
//     (--globoff), so that [1-1000000] in a value is no glob.
func checkPlacement(argv []string, args []template, i int) error {
	prefix, name, ok := firstPlaceholder(args[i])
	if !ok {
		return nil
	}
	switch {
	case prefix == "":
		return hint.Wrap(fmt.Errorf("{%s} starts the argument, so the agent's value could be read as an option (-x) or a file (@file)", name),
			fmt.Sprintf("put fixed text before it, e.g. \"%s: {%s}\"", name, name))
	case strings.HasPrefix(prefix, "-"):
		return hint.Wrap(fmt.Errorf("%s holds {%s} in an option (%q): the agent's value could become the option's or a file's name", termtext.Esc(argv[i]), name, prefix),
			"give the option as an argument of its own and the value as the next one, starting with fixed text")
	case prefix[0] == '@' || prefix[0] == '<':
		return fmt.Errorf("%s starts with %q, a file reference, and holds {%s}: the agent would choose the file", termtext.Esc(argv[i]), prefix[:1], name)
	}
	if filepath.Base(argv[0]) != "curl" {
		return nil
	}
	prev := argv[i-1]
	switch {
	case slices.Contains(curlValueOptions, prev):
		return nil
	case slices.Contains(curlNamedOptions, prev):
		if !strings.Contains(prefix, "=") {
			return hint.Wrap(fmt.Errorf("curl's %s reads a file when its value holds an '@' before any '=', and {%s} may hold one", prev, name),
				fmt.Sprintf("write a '=' before it, e.g. \"=%s\" or \"msg=%s\"", argv[i], argv[i]))
		}
		return nil
	case strings.HasPrefix(prefix, "https://") || strings.HasPrefix(prefix, "http://"):
		if _, rest, _ := strings.Cut(prefix, "://"); !strings.Contains(rest, "/") {
			return hint.Wrap(fmt.Errorf("the URL %s holds {%s} before the end of its host, so the agent would choose the server", termtext.Esc(argv[i]), name),
				"put placeholders only after the host's /")
		}
		if !slices.Contains(argv[1:], "-g") && !slices.Contains(argv[1:], "--globoff") {
			return fmt.Errorf("the URL %s holds {%s}, which curl would expand as a glob ([1-1000000] is a million requests); add -g (--globoff)", termtext.Esc(argv[i]), name)
		}
		return nil
	}
	return hint.Wrap(fmt.Errorf("{%s} is an argument of curl where curl may read it as an option's file or name", name),
		fmt.Sprintf("give it as the value of %s, after '=' in the value of %s, or in an http(s) URL",
			strings.Join(curlValueOptions, ", "), strings.Join(curlNamedOptions, " or ")))
}

// command is a checked notifier: its program and its arguments' templates.
type command struct {
	argv0 string
	args  []template
}

// compile parses the notifier key, checking it first.
func compile(key string, argv []string) (command, error) {
	if err := Check(key, argv); err != nil {
		return command{}, err
	}
	c := command{argv0: argv[0]}
	for _, a := range argv[1:] {
		t, err := parseArg(a)
		if err != nil { // unreachable after Check
			return command{}, err
		}
		c.args = append(c.args, t)
	}
	return c, nil
}

// markup escapes the characters of the markup notify-send's body is read
// as, so that the agent's text shows as text: no bold, no link, no image.
var markup = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// expand returns c's argument vector with every placeholder replaced by
// its value in v (already escaped and bounded). For notify-send, whose
// body is markup, each value is markup-escaped too (in the summary as well:
// which argument is the body depends on its options).
func (c command) expand(v map[string]string) []string {
	argv := []string{c.argv0}
	isMarkup := filepath.Base(c.argv0) == "notify-send"
	for _, t := range c.args {
		var b strings.Builder
		for _, p := range t {
			switch {
			case p.name != "" && isMarkup:
				b.WriteString(markup.Replace(v[p.name]))
			case p.name != "":
				b.WriteString(v[p.name])
			default:
				b.WriteString(p.lit)
			}
		}
		argv = append(argv, b.String())
	}
	return argv
}
