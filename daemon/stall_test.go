package daemon

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/config"
)

// TestLineSentInTimeReadAfterAStall: bytes that reached the socket before
// the daemon read them are read, whatever the deadlines say by the time the
// daemon gets to them (issue 32, fault 6). A daemon stopped with SIGSTOP, or
// a paused VM, resumes after first_byte_timeout and read_timeout have
// passed; the agent sent its line in time and must not be told it sent
// nothing, or too little. The stall is injected: the connection was
// "accepted" an hour ago, so both deadlines have passed before the first
// read. Only what is really missing is still idle or late.
func TestLineSentInTimeReadAfterAStall(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	line := `{"version":1,"id":"x"}` + "\n"
	for _, tc := range []struct {
		name     string
		sent     string
		close    bool
		wantIdle bool
		wantLine string
		wantErr  error // errors.Is
	}{
		{name: "whole line waiting", sent: line, wantLine: line},
		{name: "whole line waiting, then closed", sent: line, close: true, wantLine: line},
		{name: "nothing sent", wantIdle: true},
		{name: "part of a line", sent: line[:5], wantErr: os.ErrDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			daemonSide, agentSide := socketPair(t)
			if tc.sent != "" {
				if _, err := agentSide.Write([]byte(tc.sent)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.close {
				if err := agentSide.CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			got, idle, err := readLine(cfg, daemonSide, time.Now().Add(-time.Hour))
			if idle != tc.wantIdle {
				t.Fatalf("idle = %v, want %v (line %q, err %v)", idle, tc.wantIdle, got, err)
			}
			if string(got) != tc.wantLine {
				t.Errorf("line = %q, want %q (err %v)", got, tc.wantLine, err)
			}
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
}
