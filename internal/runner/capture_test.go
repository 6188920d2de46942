package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestCaptureHugePages: a capture's first 2 MiB are ordinary pages and the
// rest is advised MADV_HUGEPAGE (VmFlags "hg" in /proc/self/smaps), as
// docs/execution.md ("Output") says; a capture of at most 2 MiB is not advised at all.
func TestCaptureHugePages(t *testing.T) {
	var big, small capture
	if err := big.init(16 << 20); err != nil {
		t.Fatal(err)
	}
	defer big.release()
	if err := small.init(smallPagesBytes); err != nil {
		t.Fatal(err)
	}
	defer small.release()
	addr := func(b []byte, off int) uintptr { return uintptr(unsafe.Pointer(&b[off])) }
	for _, tt := range []struct {
		name string
		at   uintptr
		hg   bool
	}{
		{"big capture, first byte", addr(big.buf, 0), false},
		{"big capture, last small page", addr(big.buf, smallPagesBytes-1), false},
		{"big capture, first advised byte", addr(big.buf, smallPagesBytes), true},
		{"big capture, last byte", addr(big.buf, len(big.buf)-1), true},
		{"2 MiB capture, last byte", addr(small.buf, len(small.buf)-1), false},
	} {
		flags, err := vmFlags(tt.at)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(" "+flags+" ", " hg "); got != tt.hg {
			t.Errorf("%s: VmFlags %q, want huge page advice %v", tt.name, flags, tt.hg)
		}
	}
}

// vmFlags returns the VmFlags line of the mapping of this process that
// holds addr.
func vmFlags(addr uintptr) (string, error) {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, _ := strings.Cut(f[0], "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= l && uint64(addr) < h
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	return "", fmt.Errorf("no mapping holds %#x", addr)
}
