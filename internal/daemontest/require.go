package daemontest

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

var (
	cgroupsOnce sync.Once
	cgroupsErr  error
)

// CgroupsAvailable reports whether this system offers the daemon
// per-request cgroups (runner.OpenCgroups succeeds for a root process), and
// if not, why.
func CgroupsAvailable() error {
	cgroupsOnce.Do(func() {
		if os.Geteuid() != 0 {
			cgroupsErr = errors.New("not root")
			return
		}
		_, cgroupsErr = runner.OpenCgroups()
	})
	return cgroupsErr
}

// RequireCgroups skips the test unless the daemon can make per-request
// cgroups here.
func RequireCgroups(t testing.TB) {
	t.Helper()
	if err := CgroupsAvailable(); err != nil {
		t.Skipf("no per-request cgroups on this system: %v", err)
	}
}

// RequireRoot skips the test under -short and unless it runs as root (see
// testenv.NeedsRoot).
func RequireRoot(t testing.TB) {
	t.Helper()
	testenv.NeedsRoot(t)
}
