package hint

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"
)

func TestOf(t *testing.T) {
	base := New("no such console", "build both binaries together")
	for _, tc := range []struct {
		name  string
		err   error
		msg   string
		hints []string
	}{
		{"none", errors.New("plain"), "plain", nil},
		{"nil", nil, "", nil},
		{"one", base, "no such console", []string{"build both binaries together"}},
		{"wrapped", fmt.Errorf("--tty: %w", base), "--tty: no such console", []string{"build both binaries together"}},
		{"two", Wrap(fmt.Errorf("config: %w", base), "see docs/config.md"), "config: no such console",
			[]string{"see docs/config.md", "build both binaries together"}},
		{"joined", errors.Join(base, New("other", "do this")), "no such console\nother",
			[]string{"build both binaries together", "do this"}},
		{"repeated", Wrap(base, "build both binaries together"), "no such console", []string{"build both binaries together"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err != nil && tc.err.Error() != tc.msg {
				t.Errorf("Error() = %q, want %q: a hint must not lengthen the message", tc.err.Error(), tc.msg)
			}
			if got := Of(tc.err); !slices.Equal(got, tc.hints) {
				t.Errorf("Of = %q, want %q", got, tc.hints)
			}
		})
	}
}

func TestWrapKeepsTheChain(t *testing.T) {
	err := Wrap(fmt.Errorf("open: %w", fs.ErrNotExist), "create it")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is does not see through the hint")
	}
	if Wrap(nil, "x") != nil {
		t.Error("Wrap(nil) is not nil")
	}
	if got := Of(err); len(got) != 1 || got[0] != "create it" {
		t.Errorf("Of = %q, want [create it]", got)
	}
}
