package cli

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// startWebApprover starts the real web approver, `cli approve` with args,
// and waits for its first line, which must contain first; the rest of its
// output is read and dropped. It is interrupted when the test ends, and
// its log shown if the test failed.
func startWebApprover(t *testing.T, cli, first string, args ...string) {
	t.Helper()
	web := exec.Command(cli, append([]string{"approve"}, args...)...)
	web.Env = daemontest.RaceEnv(os.Environ())
	out, err := web.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	web.Stderr = &stderr
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = web.Process.Signal(os.Interrupt)
		_ = web.Wait()
		if t.Failed() {
			t.Logf("the web approver's log:\n%s", stderr.String())
		}
	})
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.Contains(sc.Text(), first) {
		t.Fatalf("first line %q, want one with %q", sc.Text(), first)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
}

// enrolment is a running `agent-sudo approve web enroll`.
type enrolment struct {
	t       *testing.T
	cmd     *exec.Cmd
	sc      *bufio.Scanner
	printed strings.Builder
	stderr  bytes.Buffer
	// origin is the enrolment page's, and path the one-time link's path.
	origin, path string
}

// startEnrol starts `cli approve web enroll` with args, its page at
// origin, and reads what it prints until the one-time link has come and
// the output holds until. It is killed when the test ends, unless it
// ended (wait).
func startEnrol(t *testing.T, cli, origin, until string, args ...string) *enrolment {
	t.Helper()
	e := &enrolment{t: t, origin: origin, cmd: exec.Command(cli, append([]string{"approve", "web", "enroll"}, args...)...)}
	e.cmd.Env = daemontest.RaceEnv(os.Environ())
	out, err := e.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e.cmd.Stderr = &e.stderr
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if e.cmd.ProcessState == nil {
			_ = e.cmd.Process.Kill()
			_ = e.cmd.Wait()
		}
	})
	e.sc = bufio.NewScanner(out)
	var link string
	for link == "" || !strings.Contains(e.printed.String(), until) {
		if !e.sc.Scan() {
			t.Fatalf("enroll ended before printing the link and %q:\n%s\nstderr: %s", until, e.printed.String(), e.stderr.String())
		}
		line := e.sc.Text()
		e.printed.WriteString(line + "\n")
		if l := strings.TrimSpace(line); strings.HasPrefix(l, origin+"/enroll/") {
			link = l
		}
	}
	e.path = strings.TrimPrefix(link, origin)
	return e
}

// post posts body to the link's path + p from the page's origin, as the
// page's script does, and returns the answer, which must be 200.
func (e *enrolment) post(p string, body []byte) []byte {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.origin+e.path+p, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Origin", e.origin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("POST %s: %d %s\nstderr: %s", p, resp.StatusCode, b, e.stderr.String())
	}
	return b
}

// wait reads the rest of what enroll prints, waits for it to end, which
// must be with status 0, and returns all it printed.
func (e *enrolment) wait() string {
	e.t.Helper()
	for e.sc.Scan() {
		e.printed.WriteString(e.sc.Text() + "\n")
	}
	if err := e.cmd.Wait(); err != nil {
		e.t.Fatalf("enroll: %v\n%s\nstderr: %s", err, e.printed.String(), e.stderr.String())
	}
	return e.printed.String()
}
