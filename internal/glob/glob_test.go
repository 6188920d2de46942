package glob

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, input string
		want           bool
	}{
		{"", "", true},
		{"", "a", false},
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"abc", "ab", false},
		{"*", "", true},
		{"*", "anything/at/all", true},
		{"a*", "a", true},
		{"a*", "abc", true},
		{"a*", "ba", false},
		{"*a", "ba", true},
		{"*a", "ab", false},
		{"a*b", "ab", true},
		{"a*b", "a/x/b", true},
		{"a*b", "a", false},
		{"a*a", "a", false}, // prefix and suffix must not overlap
		{"a*a", "aa", true},
		{"*.service", "nginx.service", true},
		{"*.service", ".service", true},
		{"*.service", "nginx.socket", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "axbyc", true},
		{"a*b*c", "acb", false},
		{"a*b*b*c", "abbc", true},
		{"a*b*b*c", "abc", false},
		{"**", "", true},
		{"**", "x", true},
		{"?", "?", true},
		{"?", "x", false},
		{"[a]", "a", false},
		{"[a]", "[a]", true},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{`\*`, "", false},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{`\\`, `\`, true},
		{`\\`, `\\`, false},
		{`\\*`, `\anything`, true},
		{`\\\*`, `\*`, true},
		{`*\*`, "abc*", true},
		{`*\*`, "abc", false},
	}
	for _, tt := range tests {
		g, err := Compile(tt.pattern)
		if err != nil {
			t.Errorf("Compile(%q): unexpected error %v", tt.pattern, err)
			continue
		}
		if got := g.Match(tt.input); got != tt.want {
			t.Errorf("glob %q matching %q: got %v, want %v", tt.pattern, tt.input, got, tt.want)
		}
	}
}

func TestGlobInvalid(t *testing.T) {
	tests := []struct {
		pattern, wantErr string
	}{
		{`\`, "lone backslash"},
		{`abc\`, "lone backslash"},
		{`\x`, `may only escape`},
		{`a\?`, `may only escape`},
		{`\\\`, "lone backslash"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.pattern)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Compile(%q): got error %v, want one containing %q", tt.pattern, err, tt.wantErr)
		}
	}
}

// reference builds the regular expression that a valid pattern means, as an
// independent implementation to check the matcher against.
func reference(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '*':
			b.WriteString(`.*`)
		case '\\':
			i++
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	b.WriteString(`)$`)
	return regexp.MustCompile(b.String())
}

func FuzzMatch(f *testing.F) {
	seeds := [][2]string{
		{"", ""}, {"*", "x"}, {"a*b", "axxb"}, {`\*`, "*"}, {`\\`, `\`},
		{"a*b*c", "abcabc"}, {"*.service", "x.service"}, {"?", "?"},
		{`\`, "x"}, {`\q`, "q"}, {"**", "a/b"}, {"é*", "éa"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, input string) {
		g, err := Compile(pattern)
		if err != nil {
			return
		}
		got := g.Match(input)
		if !strings.ContainsAny(pattern, `*\`) {
			if want := input == pattern; got != want {
				t.Fatalf("literal pattern %q matching %q: got %v, want %v", pattern, input, got, want)
			}
		}
		if !strings.Contains(pattern, "*") && !g.Match(unescape(pattern)) {
			t.Fatalf("pattern %q does not match its own unescaped text %q", pattern, unescape(pattern))
		}
		// regexp works on UTF-8, so compare with it only there, and only on
		// short inputs: its cost grows with the product of the lengths.
		if utf8.ValidString(pattern) && utf8.ValidString(input) && len(pattern) <= 64 && len(input) <= 256 {
			if want := reference(pattern).MatchString(input); got != want {
				t.Fatalf("pattern %q matching %q: got %v, reference regexp says %v", pattern, input, got, want)
			}
		}
	})
}

// unescape returns the literal text a star-free valid pattern matches.
func unescape(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == '\\' {
			i++
		}
		if i < len(pattern) {
			b.WriteByte(pattern[i])
		}
	}
	return b.String()
}

func TestEscapedStar(t *testing.T) {
	g, err := Compile(`claude-*-\*`)
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{"claude-a-*": true, "claude--*": true, "claude-a-b": false, "x-claude-a-*": false} {
		if got := g.Match(s); got != want {
			t.Errorf("Match(%q) = %v, want %v", s, got, want)
		}
	}
	if _, err := Compile(`a\b`); err == nil {
		t.Error(`Compile("a\\b") accepted a stray backslash`)
	}
}
