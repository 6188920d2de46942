package daemontest

import (
	"slices"
	"testing"
)

// TestRaceEnv: RaceEnv adds atexit_sleep_ms=0 to GORACE and keeps every
// other GORACE option, from env or else from this process's environment;
// an atexit_sleep_ms already given wins (docs/development.md).
func TestRaceEnv(t *testing.T) {
	for _, c := range []struct {
		name, process string // process: this process's GORACE, "" for unset
		env, want     []string
	}{
		{"none", "", []string{"PATH=/bin"}, []string{"PATH=/bin", "GORACE=atexit_sleep_ms=0"}},
		{"process options kept", "halt_on_error=1", []string{"PATH=/bin"}, []string{"PATH=/bin", "GORACE=halt_on_error=1 atexit_sleep_ms=0"}},
		{"env wins over process", "halt_on_error=1", []string{"GORACE=history_size=3", "A=b"}, []string{"A=b", "GORACE=history_size=3 atexit_sleep_ms=0"}},
		{"given sleep wins", "", []string{"GORACE=atexit_sleep_ms=50 halt_on_error=1"}, []string{"GORACE=atexit_sleep_ms=50 halt_on_error=1"}},
		{"empty env GORACE", "halt_on_error=1", []string{"GORACE="}, []string{"GORACE=atexit_sleep_ms=0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GORACE", c.process)
			if got := RaceEnv(c.env); !slices.Equal(got, c.want) {
				t.Errorf("RaceEnv(%q) with GORACE=%q = %q, want %q", c.env, c.process, got, c.want)
			}
		})
	}
}
