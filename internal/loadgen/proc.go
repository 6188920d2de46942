package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Proc is one reading of a process from /proc.
type Proc struct {
	// RSS and HWM are VmRSS and VmHWM (the peak since the process
	// started), in bytes.
	RSS, HWM int64
	// Threads is the number of threads.
	Threads int
	// FDs is the number of open file descriptors.
	FDs int
}

// ReadProc reads pid's memory, threads and open descriptors from /proc.
// Counting another user's descriptors needs the right to trace it (root).
func ReadProc(pid int) (Proc, error) {
	var p Proc
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p, fmt.Errorf("read process %d: %w", pid, err)
	}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		var err error
		switch key {
		case "VmRSS":
			p.RSS, err = kB(value)
			found++
		case "VmHWM":
			p.HWM, err = kB(value)
			found++
		case "Threads":
			p.Threads, err = strconv.Atoi(value)
			found++
		}
		if err != nil {
			return p, fmt.Errorf("/proc/%d/status: %s: %w", pid, key, err)
		}
	}
	if found != 3 {
		return p, fmt.Errorf("/proc/%d/status lacks VmRSS, VmHWM or Threads (a zombie?)", pid)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return p, fmt.Errorf("count the descriptors of process %d: %w", pid, err)
	}
	p.FDs = len(fds)
	return p, nil
}

// kB parses "1234 kB" into bytes.
func kB(s string) (int64, error) {
	n, ok := strings.CutSuffix(s, " kB")
	if !ok {
		return 0, errors.New("not a size in kB: " + strconv.Quote(s))
	}
	v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
	return v * 1024, err
}
