package rules

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// glob is a compiled pattern of the rule language: literal text and '*'
// wildcards, where '*' matches any run of bytes (including none and
// including '/'). It is matched byte by byte, so it needs no backtracking and
// runs in time linear in the pattern and quadratic at worst in the input.
type glob struct {
	// parts are the literal pieces between the wildcards, unescaped. A
	// pattern with n wildcards has n+1 parts; some may be empty.
	parts []string
}

// compileGlob parses pattern. The only metacharacter is '*'; '\*' is a
// literal star and '\\' a literal backslash. A backslash before anything
// else, or at the end, is an error rather than a silent literal: a pattern
// that means something other than what its author thought is worse than a
// refused configuration.
func compileGlob(pattern string) (glob, error) {
	var (
		parts []string
		cur   strings.Builder
	)
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			parts = append(parts, cur.String())
			cur.Reset()
		case '\\':
			if i+1 == len(pattern) {
				return glob{}, fmt.Errorf("pattern %q ends with a lone backslash; write \\\\ for a literal backslash", pattern)
			}
			next := pattern[i+1]
			if next != '*' && next != '\\' {
				return glob{}, fmt.Errorf("pattern %q has %q at byte %d; a backslash may only escape '*' or '\\'", pattern, pattern[i:i+2], i)
			}
			cur.WriteByte(next)
			i++
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	return glob{parts: parts}, nil
}

// literal reports whether g has no wildcard, so that it matches exactly one
// string.
func (g glob) literal() bool { return len(g.parts) == 1 }

// match reports whether s matches the whole pattern.
func (g glob) match(s string) bool {
	if g.literal() {
		return s == g.parts[0]
	}
	first, last := g.parts[0], g.parts[len(g.parts)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	// The first and last parts are anchored; each middle part must be found,
	// in order and without overlap, in what lies between them. Taking the
	// leftmost occurrence each time is optimal: it leaves the most room for
	// the parts after it.
	rest := s[len(first) : len(s)-len(last)]
	for _, p := range g.parts[1 : len(g.parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

// hasSlash reports whether the pattern contains a literal '/'. Escapes
// cannot produce one, so looking at the raw pattern is enough.
func hasSlash(pattern string) bool { return strings.Contains(pattern, "/") }

// Glob is a compiled pattern with the rules' glob syntax: '*' matches any
// run of bytes (including '/'), '\*' and '\\' are a literal star and
// backslash, and any other backslash is an error. It is exported so that
// other filters over the same names (the audit CLI's --session and --host)
// mean exactly what a rule's session pattern means.
type Glob struct{ g glob }

// CompileGlob parses pattern.
func CompileGlob(pattern string) (*Glob, error) {
	g, err := compileGlob(pattern)
	if err != nil {
		return nil, err
	}
	return &Glob{g: g}, nil
}

// Match reports whether s matches the whole pattern.
func (g *Glob) Match(s string) bool { return g.g.match(s) }

// argProblem says why an allow rule must not let g's wildcards match arg,
// or returns "" when it may. g must match arg. A literal pattern matches only
// what its author wrote, so it never has a problem. For a pattern with
// wildcards (see the package documentation, "Arguments an allow rule
// accepts"):
//
//   - no wildcard may cover a control character (NUL, newline, ESC, ...) or
//     bytes that are not UTF-8;
//   - a pattern that begins with a wildcard matches no argument that begins
//     with '-': "*.service" is a unit name, never the option -Hhost.service;
//   - a pattern whose leading literal text contains '/' (such as
//     "/var/log/*" or "--file=/var/log/*") describes a path below the
//     directory that text names: the argument from that text's last '/' on
//     must be a clean path, with no empty, "." or ".." component, and may end
//     in '/' only when the pattern does;
//   - any other pattern with a '/' ("*/log") must match a clean absolute
//     path as a whole, under the same conditions;
//   - a pattern without '/' ("*.conf", "--file=*") describes a name, not a
//     path: the argument must contain no '/', and no part of it between
//     '=' and ':' separators may be "." or "..".
//
// The returned text quotes nothing from arg.
func (g glob) argProblem(arg string) string {
	if g.literal() {
		return ""
	}
	if !utf8.ValidString(arg) || strings.IndexFunc(arg, unicode.IsControl) >= 0 {
		return "contains a control character or is not UTF-8, which a wildcard never matches in an allow rule"
	}
	if g.parts[0] == "" && strings.HasPrefix(arg, "-") {
		return "begins with '-', so the program would read it as an option, which a pattern that begins with a wildcard never means"
	}
	last := g.parts[len(g.parts)-1]
	trailing := strings.HasSuffix(last, "/")
	if k := strings.LastIndexByte(g.parts[0], '/'); k >= 0 {
		// arg[k:] == "/" with k > 0 is the directory itself, written with a
		// trailing '/'.
		if !cleanPath(arg[k:], trailing) || arg[k:] == "/" && k > 0 && !trailing {
			return fmt.Sprintf("is not a clean path below %q (no empty, \".\" or \"..\" component, no trailing '/')", g.parts[0][:k+1])
		}
		return ""
	}
	if g.hasSlash() {
		if !strings.HasPrefix(arg, "/") || !cleanPath(arg, trailing) {
			return "is not a clean absolute path (no empty, \".\" or \"..\" component, no trailing '/'), which a pattern with '/' after a wildcard requires"
		}
		return ""
	}
	if strings.Contains(arg, "/") {
		return "contains '/', and a pattern without '/' matches a name, never a path"
	}
	for _, part := range strings.FieldsFunc(arg, func(r rune) bool { return r == '=' || r == ':' }) {
		if part == "." || part == ".." {
			return "names the directory \".\" or \"..\""
		}
	}
	return ""
}

// hasSlash reports whether any literal part of g contains '/'.
func (g glob) hasSlash() bool {
	for _, p := range g.parts {
		if strings.Contains(p, "/") {
			return true
		}
	}
	return false
}

// cleanPath reports whether p, which starts with '/', is clean: no empty,
// "." or ".." component, and no trailing '/' unless trailingOK ("/" alone is
// clean).
func cleanPath(p string, trailingOK bool) bool {
	if strings.Contains(p, "//") {
		return false
	}
	if len(p) > 1 && strings.HasSuffix(p, "/") {
		if !trailingOK {
			return false
		}
		p = p[:len(p)-1]
	}
	return path.Clean(p) == p
}
