package daemon

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/config"
	"golang.org/x/sys/unix"
)

// TestReadLineStartedAfterFirstByteTimeout: first_byte_timeout bounds only
// the wait for the first byte. A line whose first byte is in, and whose rest
// comes after first_byte_timeout, still has read_timeout to finish; one
// that has sent nothing by then is idle; read_timeout bounds the whole line.
// The connection's clock is readLine's accepted, set in the past here so
// that the deadlines have passed without a wait.
func TestReadLineStartedAfterFirstByteTimeout(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{FirstByteTimeout: config.Duration{Duration: time.Second}, ReadTimeout: config.Duration{Duration: time.Minute}}
	const line = `{"pipeline":[["true"]]}`
	tests := []struct {
		name string
		// ago: how long before now the connection was accepted.
		ago time.Duration
		// first is what the socket holds when readLine starts; the rest of
		// line is sent once readLine has taken it.
		first    string
		want     string
		wantIdle bool
		wantErr  error
	}{
		{"started, finished after first_byte_timeout", 2 * time.Second, line[:1], line + "\n", false, nil},
		{"nothing within first_byte_timeout", 2 * time.Second, "", "", true, nil},
		{"started, past read_timeout", 2 * time.Minute, line[:1], "", false, os.ErrDeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			daemonEnd, agentEnd := socketPair(t)
			if tt.first != "" {
				if _, err := agentEnd.Write([]byte(tt.first)); err != nil {
					t.Fatal(err)
				}
			}
			type result struct {
				line []byte
				idle bool
				err  error
			}
			done := make(chan result, 1)
			go func() {
				l, idle, err := readLine(cfg, daemonEnd, time.Now().Add(-tt.ago))
				done <- result{l, idle, err}
			}()
			if tt.first != "" && tt.wantErr == nil {
				// Once readLine has taken the first byte (there is no
				// event to wait for: poll the queue), past
				// first_byte_timeout, the rest comes.
				for queued(t, daemonEnd) > 0 {
					time.Sleep(time.Millisecond)
				}
				if _, err := agentEnd.Write([]byte(line[len(tt.first):] + "\n")); err != nil {
					t.Fatal(err)
				}
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("readLine did not return")
			}
			if string(r.line) != tt.want || r.idle != tt.wantIdle || !errors.Is(r.err, tt.wantErr) {
				t.Errorf("readLine = %q, idle %v, %v; want %q, idle %v, %v", r.line, r.idle, r.err, tt.want, tt.wantIdle, tt.wantErr)
			}
		})
	}
}

// queued is how many bytes conn's receive queue holds.
func queued(t *testing.T, conn *net.UnixConn) int {
	t.Helper()
	rc, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		t.Fatal(err)
	}
	if ierr != nil {
		t.Fatalf("SIOCINQ: %v", ierr)
	}
	return n
}
