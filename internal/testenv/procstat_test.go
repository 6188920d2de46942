package testenv

import (
	"os"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and parentheses, as a process may name
	// itself: the name ends at the last ')'.
	line := []byte("4242 (a) b (c)) S 1 4242 4240 34817 4242 4194560 100 0 0 0 250 70 0 0 20 0 1 0 123 456 789\n")
	s, err := ParseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if s.State() != "S" || s.PPID() != 1 || s.PGRP() != 4242 || s.Session() != 4240 || s.TTYNr() != 34817 {
		t.Errorf("state %s ppid %d pgrp %d session %d tty %d, want S 1 4242 4240 34817", s.State(), s.PPID(), s.PGRP(), s.Session(), s.TTYNr())
	}
	if got, want := s.CPUTime().String(), "3.2s"; got != want {
		t.Errorf("CPUTime = %s, want %s (250+70 ticks)", got, want)
	}
	for _, bad := range []string{"4242 no name S 1", "4242 (x) S 1 2 3"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("ParseProcStat(%q) did not fail", bad)
		}
	}
	self, err := ReadProcStat(os.Getpid())
	if err != nil || self.PPID() != os.Getppid() {
		t.Errorf("ReadProcStat(self) = %v, %v; want ppid %d", self, err, os.Getppid())
	}
}
