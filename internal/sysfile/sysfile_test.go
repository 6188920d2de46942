package sysfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestRead: a file is read whole, or up to max bytes and cut after,
// whatever its size against the growing read buffer; a missing one is
// fs.ErrNotExist, as os.ReadFile says.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	const max = 4096
	for _, size := range []int{0, 1, 511, 512, 513, 1024, 3000, max - 1, max, max + 1, 3 * max} {
		name := filepath.Join(dir, fmt.Sprint(size))
		content := make([]byte, size)
		for i := range content {
			content[i] = byte('a' + i%26)
		}
		if err := os.WriteFile(name, content, 0o644); err != nil {
			t.Fatal(err)
		}
		b, whole, err := Read(name, max)
		want := content[:min(size, max)]
		if err != nil || string(b) != string(want) || whole != (size <= max) {
			t.Errorf("%d bytes, max %d: got %d bytes (equal %v), whole %v, %v", size, max, len(b), string(b) == string(want), whole, err)
		}
		if b, err := ReadFile(name); err != nil || string(b) != string(content) {
			t.Errorf("%d bytes whole: got %d bytes (equal %v), %v", size, len(b), string(b) == string(content), err)
		}
	}
	_, _, err := Read(filepath.Join(dir, "missing"), max)
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" {
		t.Errorf("missing file: %v, want an open *fs.PathError that is fs.ErrNotExist", err)
	}
}

// TestWriteFile writes into an existing file, and refuses a missing one
// (a kernel file is never created).
func TestWriteFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(name, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "1" {
		t.Errorf("the file holds %q, want 1", b)
	}
	if err := WriteFile(name+"-missing", []byte("1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write to a missing file: %v, want fs.ErrNotExist", err)
	}
}
