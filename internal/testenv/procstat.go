package testenv

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// ProcStat is a line of /proc/PID/stat, as the tests read a process's
// state, parent, process group, session, terminal and CPU time. Its
// Fields are those after the command name, which ends at the line's last
// ')' (a name may hold spaces and parentheses): Fields[0] is the state,
// field 3 of proc(5), and field n of proc(5) is Fields[n-3].
type ProcStat struct {
	Fields []string
}

// procStatFields is how many fields after the command name ParseProcStat
// requires: up to stime, field 15.
const procStatFields = 13

// ParseProcStat parses a /proc/PID/stat line.
func ParseProcStat(line []byte) (ProcStat, error) {
	end := bytes.LastIndexByte(line, ')')
	if end < 0 {
		return ProcStat{}, fmt.Errorf("stat line %q has no command name", line)
	}
	f := bytes.Fields(line[end+1:])
	if len(f) < procStatFields {
		return ProcStat{}, fmt.Errorf("stat line %q has %d fields after the command name, want %d or more", line, len(f), procStatFields)
	}
	s := ProcStat{Fields: make([]string, len(f))}
	for i, b := range f {
		s.Fields[i] = string(b)
	}
	return s, nil
}

// ReadProcStat reads and parses /proc/PID/stat; its error wraps
// fs.ErrNotExist when the process is gone (reaped).
func ReadProcStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcStat{}, err
	}
	return ParseProcStat(b)
}

// MustProcStat is ReadProcStat that fails the test on an error.
func MustProcStat(t testing.TB, pid int) ProcStat {
	t.Helper()
	s, err := ReadProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// State is the process's state letter: R, S, D, Z (a zombie), T and so on.
func (s ProcStat) State() string { return s.Fields[0] }

// PPID, PGRP, Session and TTYNr are fields 4 to 7: the parent's pid, the
// process group, the session and the controlling terminal (0 for none).
func (s ProcStat) PPID() int    { return s.num(1) }
func (s ProcStat) PGRP() int    { return s.num(2) }
func (s ProcStat) Session() int { return s.num(3) }
func (s ProcStat) TTYNr() int   { return s.num(4) }

// CPUTime is the CPU time the process itself has used, in user and system
// mode (fields 14 and 15, in clock ticks of USER_HZ, 100 on Linux), without
// its children's.
func (s ProcStat) CPUTime() time.Duration {
	const userHZ = 100
	return time.Duration(s.num(11)+s.num(12)) * time.Second / userHZ
}

// num is field i as a number, -1 when it is not one (never, from the kernel).
func (s ProcStat) num(i int) int {
	n, err := strconv.Atoi(s.Fields[i])
	if err != nil {
		return -1
	}
	return n
}
