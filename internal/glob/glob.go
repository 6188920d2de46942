// Package glob is the pattern language of the rules: literal text and '*'
// wildcards, where '*' matches any run of bytes (including none and
// including '/'). The same patterns filter other names that a rule can
// match (the audit CLI's --session and --host), so that a filter means
// exactly what a rule's pattern means.
//
// A pattern is matched byte by byte, so it needs no backtracking and runs in
// time linear in the pattern and quadratic at worst in the input. The only
// metacharacter is '*'; '\*' is a literal star and '\\' a literal
// backslash. A backslash before anything else, or at the end, is an error
// rather than a silent literal: a pattern that means something other than
// what its author thought is worse than a refused configuration.
package glob

import (
	"fmt"
	"strings"
)

// Pattern is a compiled pattern. The zero Pattern matches only "".
type Pattern struct {
	// parts are the literal pieces between the wildcards, unescaped. A
	// pattern with n wildcards has n+1 parts; some may be empty.
	parts []string
}

// Compile parses pattern, or says which byte of it is wrong.
func Compile(pattern string) (Pattern, error) {
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
				return Pattern{}, fmt.Errorf("pattern %q ends with a lone backslash; write \\\\ for a literal backslash", pattern)
			}
			next := pattern[i+1]
			if next != '*' && next != '\\' {
				return Pattern{}, fmt.Errorf("pattern %q has %q at byte %d; a backslash may only escape '*' or '\\'", pattern, pattern[i:i+2], i)
			}
			cur.WriteByte(next)
			i++
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	return Pattern{parts: parts}, nil
}

// Literal reports whether g has no wildcard, so that it matches exactly one
// string.
func (g Pattern) Literal() bool { return len(g.parts) <= 1 }

// Prefix returns the literal text before g's first wildcard (all of it for
// a literal pattern), unescaped.
func (g Pattern) Prefix() string {
	if len(g.parts) == 0 {
		return ""
	}
	return g.parts[0]
}

// Suffix returns the literal text after g's last wildcard (all of it for a
// literal pattern), unescaped.
func (g Pattern) Suffix() string {
	if len(g.parts) == 0 {
		return ""
	}
	return g.parts[len(g.parts)-1]
}

// HasLiteral reports whether any literal text of g contains sub.
func (g Pattern) HasLiteral(sub string) bool {
	for _, p := range g.parts {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

// Match reports whether s matches the whole pattern.
func (g Pattern) Match(s string) bool {
	if g.Literal() {
		return s == g.Prefix()
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
