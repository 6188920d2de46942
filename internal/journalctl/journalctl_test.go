package journalctl

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStart: journalctl's output is read, its failure carries its error
// output (bounded), and a program that does not exist is ErrNotFound. A
// stand-in script plays journalctl; it gets only the fixed environment.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "journalctl")
	script := "#!/bin/sh\nenv >&2\nif [ \"$1\" = fail ]; then head -c 10000 /dev/zero | tr '\\0' x >&2; exit 3; fi\necho '{\"a\":1}'\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, wait, err := Start(context.Background(), prog, []string{"ok"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(out)
	if string(b) != "{\"a\":1}\n" || wait() != nil {
		t.Errorf("output %q", b)
	}
	_, wait, err = Start(context.Background(), prog, []string{"fail"})
	if err != nil {
		t.Fatal(err)
	}
	err = wait()
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "LC_ALL=C") ||
		strings.Contains(err.Error(), "PATH=") || len(err.Error()) > maxStderr+200 {
		t.Errorf("failure: %.300q (%d bytes)", err, len(err.Error()))
	}
	if _, _, err := Start(context.Background(), filepath.Join(dir, "missing"), nil); err == nil || !errors.Is(err, ErrNotFound) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing program: %v", err)
	}
}
