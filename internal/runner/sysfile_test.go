package runner

import (
	"os"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestHasControllingTerminalAgreesWithStat: the /dev/tty probe gives the
// answer of the tty_nr field of /proc/self/stat, which it replaces for
// speed (TestRunUnderTerminal checks the answer under a terminal).
func TestHasControllingTerminalAgreesWithStat(t *testing.T) {
	st := testenv.MustProcStat(t, os.Getpid())
	if want := st.TTYNr() != 0; hasControllingTerminal() != want {
		t.Errorf("hasControllingTerminal() = %v; tty_nr is %d", !want, st.TTYNr())
	}
}
