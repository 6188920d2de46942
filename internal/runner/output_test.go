package runner

import (
	"sync"
	"testing"
)

// TestOutputLifetime: the memory of an Output is freed exactly once, only
// after Release and the last running Use; a Use after Release sees no bytes
// (so nothing can read unmapped memory), and a nil Output is empty.
func TestOutputLifetime(t *testing.T) {
	frees := 0
	o := newMappedOutput([]byte("abc"), func() { frees++ })
	o.Use(func(b []byte) {
		o.Release() // released while in use: the bytes stay until Use returns
		if string(b) != "abc" || frees != 0 {
			t.Errorf("inside Use after Release: %q, %d frees; want abc, 0", b, frees)
		}
	})
	if frees != 1 {
		t.Errorf("%d frees after the last Use returned, want 1", frees)
	}
	o.Use(func(b []byte) {
		if b != nil {
			t.Errorf("Use after Release lent %q, want nil", b)
		}
	})
	o.Release()
	if frees != 1 || o.Len() != 0 || o.Copy() != nil {
		t.Errorf("after a second Release: %d frees, Len %d, Copy %q; want 1, 0, nil", frees, o.Len(), o.Copy())
	}
	var none *Output
	none.Release()
	if none.Len() != 0 || none.Copy() != nil {
		t.Error("a nil Output is not empty")
	}

	// Uses from many goroutines racing a Release: one free, after them.
	frees = 0
	o = newMappedOutput([]byte("xyz"), func() { frees++ })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			o.Use(func(b []byte) {
				if b != nil && string(b) != "xyz" {
					t.Errorf("lent %q", b)
				}
			})
		})
	}
	wg.Go(o.Release)
	wg.Wait()
	if frees != 1 {
		t.Errorf("%d frees with Uses racing Release, want 1", frees)
	}
}

// TestResultUseAfterRelease: a pipeline's real output, released, lends
// nothing: the mapping is gone and nothing reads it.
func TestResultUseAfterRelease(t *testing.T) {
	var c capture
	if err := c.init(1 << 20); err != nil {
		t.Fatal(err)
	}
	c.add([]byte("out\n"))
	out, _, _ := c.result()
	res := &Result{Stdout: out, Stages: []StageResult{{Stderr: NewOutput([]byte("err\n"))}}}
	res.Use(func(stdout []byte, stderrs [][]byte) {
		if string(stdout) != "out\n" || len(stderrs) != 1 || string(stderrs[0]) != "err\n" {
			t.Errorf("Use lent %q %q", stdout, stderrs)
		}
	})
	res.Release()
	res.Use(func(stdout []byte, stderrs [][]byte) {
		if stdout != nil || stderrs[0] != nil {
			t.Errorf("after Release, Use lent %q %q; want nothing", stdout, stderrs)
		}
	})
}
