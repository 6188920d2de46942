package runner

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestHasControllingTerminalAgreesWithStat: the /dev/tty probe gives the
// answer of the tty_nr field of /proc/self/stat, which it replaces for
// speed (TestRunUnderTerminal checks the answer under a terminal).
func TestHasControllingTerminalAgreesWithStat(t *testing.T) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if want := f[4] != "0"; hasControllingTerminal() != want {
		t.Errorf("hasControllingTerminal() = %v; tty_nr is %s", !want, f[4])
	}
}
