package termtext_test

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

func TestEsc(t *testing.T) {
	for _, s := range []string{"", "plain", "a\x1b[2Jb", "\u202eevil", "é\u0301\u0301\u0301\u0301", "⌘ ½"} {
		e, _ := termtext.Escape(s)
		if got := termtext.Esc(s); got != e {
			t.Errorf("Esc(%q) = %q, want Escape's %q", s, got, e)
		}
		e, _ = termtext.EscapeStrict(s)
		if got := termtext.EscStrict(s); got != e {
			t.Errorf("EscStrict(%q) = %q, want EscapeStrict's %q", s, got, e)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "files"}, {1, "file"}, {2, "files"}, {-1, "files"}} {
		if got := termtext.Plural(tt.n, "file"); got != tt.want {
			t.Errorf("Plural(%d, file) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
