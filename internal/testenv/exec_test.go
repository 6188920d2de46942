package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// TestWriteExecutableWhileForking writes programs and runs them at once
// while other goroutines start processes as fast as they can, as parallel
// tests do: none may fail with "text file busy".
func TestWriteExecutableWhileForking(t *testing.T) {
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true in PATH")
	}
	// true with 8 MiB after it (the kernel loads only what the ELF
	// headers name): quick to run, and written over a while.
	prog, err := os.ReadFile(trueBin)
	if err != nil {
		t.Fatal(err)
	}
	prog = append(prog, make([]byte, 8<<20)...)
	ctx, stop := context.WithCancel(context.Background())
	var forks sync.WaitGroup
	for range 2 {
		forks.Go(func() {
			for ctx.Err() == nil {
				_ = exec.Command(trueBin).Run()
			}
		})
	}
	defer forks.Wait()
	defer stop()
	dir := t.TempDir()
	for i := range 20 {
		p := filepath.Join(dir, fmt.Sprintf("prog%d", i))
		WriteExecutable(t, p, prog)
		if out, err := exec.Command(p).CombinedOutput(); err != nil {
			t.Fatalf("run %s just written: %v %s", p, err, out)
		}
	}
}
