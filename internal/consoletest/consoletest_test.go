package consoletest

import "testing"

func TestDiscards(t *testing.T) {
	for _, c := range []struct {
		screen string
		want   int
	}{
		{"agent-sudo approve · 1 waiting\n> Deny (d)\n", 0},
		{"✗ input discarded: 7 keys arrived together (paste or typing ahead); press a key on its own to decide\n", 1},
		{"✗ input discarded (2×): the key arrived together with other input (paste or typing ahead); press a k...\n", 2},
		{"header\n✗ input discarded (13×): 5 keys arrived together\n", 13},
		// The agent's text is shown escaped, but a reason could spell
		// the words; only the console's notice line has the form.
		{"reason     input discarded\n", 0},
	} {
		if got := Discards(c.screen); got != c.want {
			t.Errorf("Discards(%q) = %d, want %d", c.screen, got, c.want)
		}
	}
}
