// Package browsertest is a test helper: Debian's chromium driven through
// test/web/driver.mjs (playwright-core, each page with a WebAuthn virtual
// authenticator), one JSON command a line, for the tests of the web
// approver in a real browser (test/web, test/remote). make web-test and
// make remote-test install playwright-core (test/web/install.sh) and name
// it in AGENT_SUDO_TEST_NODE_PATH.
package browsertest

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// NodePathEnv names the node_modules directory that holds playwright-core.
const NodePathEnv = "AGENT_SUDO_TEST_NODE_PATH"

// answerTimeout bounds the wait for one answer of the driver: a bound a
// loaded machine does not reach, which only ends a test that would
// otherwise hang.
const answerTimeout = 90 * time.Second

// Browser is driver.mjs running chromium, until the test ends.
type Browser struct {
	t   testing.TB
	in  io.Writer
	out chan string
}

// Start runs node on driver (the path of driver.mjs) with the
// playwright-core NodePathEnv names. Without it, the test is skipped, or
// failed when required is set (a make target that promises to run it).
func Start(t testing.TB, driver string, required bool) *Browser {
	t.Helper()
	mods := os.Getenv(NodePathEnv)
	if mods == "" {
		if required {
			t.Fatalf("%s is not set: run the make target, which installs playwright-core (test/web/install.sh)", NodePathEnv)
		}
		t.Skipf("%s is not set; make web-test runs these tests", NodePathEnv)
	}
	// driver.mjs imports playwright-core from a node_modules beside it.
	dir := t.TempDir()
	src, err := os.ReadFile(driver)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "driver.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(dir, "driver.mjs"))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := make(chan string)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(outPipe)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return &Browser{t: t, in: in, out: out}
}

// Try sends one command and returns the driver's answer, whether or not
// the command succeeded (its "ok" member says).
func (b *Browser) Try(cmd map[string]any) map[string]any {
	b.t.Helper()
	line, err := json.Marshal(cmd)
	if err != nil {
		b.t.Fatalf("browser: %v: %v", cmd, err)
	}
	if _, err := b.in.Write(append(line, '\n')); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
	select {
	case s, ok := <-b.out:
		if !ok {
			b.t.Fatal("browser: the driver exited")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			b.t.Fatalf("browser: %q: %v", s, err)
		}
		return m
	case <-time.After(answerTimeout):
		b.t.Fatalf("browser: no answer to %s within %s", line, answerTimeout)
	}
	return nil
}

// Do is Try that fails the test when the command failed.
func (b *Browser) Do(cmd map[string]any) map[string]any {
	b.t.Helper()
	m := b.Try(cmd)
	if m["ok"] != true {
		b.t.Fatalf("browser: %v: %v", cmd, m["error"])
	}
	return m
}

// Lines sends r's lines on the channel it returns, closed at r's end: the
// output of a program a browser test starts (enrolment prints the link
// the browser opens).
func Lines(r io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// ReadUntil reads lines until one contains want, and returns it; it fails
// the test when they end first or none comes within a minute.
func ReadUntil(t testing.TB, lines <-chan string, want string) string {
	t.Helper()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the output ended before a line with %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("no line with %q within 60s", want)
		}
	}
}
