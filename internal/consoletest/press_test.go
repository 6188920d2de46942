package consoletest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
)

// fakeConsole runs script (bash) in tmux as a stand-in for the console,
// and waits until it shows start. The script reads keys with `key` (a function that logs each key it reads
// to a file) and writes the screens a console would. Once it is done, it
// logs every further key, so that keys() can tell how many were pressed.
type fakeConsole struct {
	tm  *tmuxtest.Session
	log string
}

func startFake(t *testing.T, script, start string) *fakeConsole {
	t.Helper()
	testenv.NeedsTmux(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "keys")
	prelude := `key() { IFS= read -rsn1 k; printf '%s\n' "$k" >> "$1"; }` + "\n"
	rest := "\n" + `while IFS= read -rsn1 k; do printf '%s\n' "$k" >> "$1"; [ "$k" = Z ] && echo "the end"; done` + "\n"
	file := filepath.Join(dir, "fake.bash")
	if err := os.WriteFile(file, []byte(prelude+strings.ReplaceAll(script, "KEY", `key "$1"`)+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := tmuxtest.Start(t, tmuxtest.Config{Command: "bash " + file + " " + log, Cols: 100, Rows: 10, Timeout: 20 * time.Second})
	tm.WaitFor(start)
	return &fakeConsole{tm: tm, log: log}
}

// keys returns the keys the fake read, in order, once it has read every
// key pressed so far: it presses Z and waits for the fake to read it.
func (f *fakeConsole) keys(t *testing.T) string {
	t.Helper()
	f.tm.Keys("Z")
	f.tm.WaitFor("the end")
	b, err := os.ReadFile(f.log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(strings.ReplaceAll(string(b), "\n", ""), "Z")
}

// fatalTB records the first Fatalf and ends the goroutine, as
// testing.T's would; everything else goes to the real test.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// pressFailing runs Press with a testing.TB whose Fatalf is recorded, and
// returns what it said ("" when Press returned).
func pressFailing(t *testing.T, tm *tmuxtest.Session, key, want string) string {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Press(tb, tm, key, want)
	}()
	<-done
	return tb.fatal
}

// TestPress checks Press's contract against a fake console whose answers
// to each key are scripted: when it presses again, when it does not, and
// when it fails.
func TestPress(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		script string
		// start is what the fake shows when Press is called, all of
		// what it shows before its first key; "ready" when empty.
		start string
		// keys is what the fake must have read; fatal, when set, is in
		// the failure Press reports.
		keys, fatal string
	}{
		{
			name:   "a key that counts is pressed once",
			script: `echo ready; KEY; echo decided`,
			keys:   "x",
		},
		{
			name: "a slow key is waited for, not pressed again",
			// The fake takes its time, as a loaded machine would.
			script: `echo ready; KEY; sleep 1.5; echo decided`,
			keys:   "x",
		},
		{
			name:   "a discarded key is pressed again",
			script: `echo ready; KEY; echo '✗ input discarded: 2 keys arrived together'; KEY; echo decided`,
			keys:   "xx",
		},
		{
			// The new screen comes in one write, with no blank screen
			// between: the count goes from 1 to 2.
			name: "a rising count is a discard",
			script: `echo ready; echo '✗ input discarded: 2 keys arrived together'; KEY;` +
				` printf '\033[H\033[2Jready\n✗ input discarded (2×): the key arrived together with other input\n'; KEY; echo decided`,
			start: "input discarded: ",
			keys:  "xx",
		},
		{
			// The CI failure of ae5d59c: q closed the console, whose
			// screen showed an earlier discard, and the blank screen
			// between the two was taken for a discard of q.
			name: "a notice that goes away is not a discard",
			script: `echo ready; echo '✗ input discarded: 2 keys arrived together'; KEY; clear; sleep 0.5;` +
				` echo decided`,
			start: "input discarded: ",
			keys:  "x",
		},
		{
			name:   "a key is pressed at most five times",
			script: `echo ready; for n in 2 3 4 5 6; do KEY; clear; echo "✗ input discarded (${n}×): a burst"; done`,
			keys:   "xxxxx",
			fatal:  "discarded x 5 times",
		},
		{
			name:   "a wanted text already on screen is refused",
			script: `echo ready; echo decided`,
			start:  "decided",
			keys:   "",
			fatal:  "before the key is pressed",
		},
		{
			// A key pressed within the guard is logged as "early".
			name: "the key guard is waited out",
			script: `echo 'keys enabled in 0.7s'; if IFS= read -rsn1 -t 0.7 k; then echo early >> "$1"; fi;` +
				` clear; KEY; echo decided`,
			start: "keys enabled",
			keys:  "x",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			start := c.start
			if start == "" {
				start = "ready"
			}
			f := startFake(t, c.script, start)
			fatal := pressFailing(t, f.tm, "x", "decided")
			switch {
			case c.fatal == "" && fatal != "":
				t.Errorf("Press failed: %s", fatal)
			case c.fatal != "" && !strings.Contains(fatal, c.fatal):
				t.Errorf("Press failed with %q, want a failure saying %q", fatal, c.fatal)
			}
			if got := f.keys(t); got != c.keys {
				t.Errorf("the console read %q, want %q", got, c.keys)
			}
		})
	}
}
