package rules

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/internal/glob"
)

// hasSlash reports whether the pattern contains a literal '/'. Escapes
// cannot produce one, so looking at the raw pattern is enough.
func hasSlash(pattern string) bool { return strings.Contains(pattern, "/") }

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
func argProblem(g glob.Pattern, arg string) string {
	if g.Literal() {
		return ""
	}
	if !utf8.ValidString(arg) || strings.IndexFunc(arg, unicode.IsControl) >= 0 {
		return "contains a control character or is not UTF-8, which a wildcard never matches in an allow rule"
	}
	if g.Prefix() == "" && strings.HasPrefix(arg, "-") {
		return "begins with '-', so the program would read it as an option, which a pattern that begins with a wildcard never means"
	}
	trailing := strings.HasSuffix(g.Suffix(), "/")
	if k := strings.LastIndexByte(g.Prefix(), '/'); k >= 0 {
		// arg[k:] == "/" with k > 0 is the directory itself, written with a
		// trailing '/'.
		if !cleanPath(arg[k:], trailing) || arg[k:] == "/" && k > 0 && !trailing {
			return fmt.Sprintf("is not a clean path below %q (no empty, \".\" or \"..\" component, no trailing '/')", g.Prefix()[:k+1])
		}
		return ""
	}
	if g.HasLiteral("/") {
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
