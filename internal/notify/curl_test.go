package notify

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// received is one request a test server got.
type received struct {
	path, title, body string
	// all is the request line's target, every header and the body.
	all string
}

// curlServer is an HTTP server on the loopback that records what it gets.
func curlServer(t *testing.T) (url string, got func() []received) {
	t.Helper()
	var mu sync.Mutex
	var reqs []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		reqs = append(reqs, received{path: r.URL.Path, title: r.Header.Get("Title"), body: string(body),
			all: fmt.Sprintf("%s %v %s", r.RequestURI, r.Header, body)})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), reqs...)
	}
}

// TestCurlPlaceholders, with the real curl: where the loader refuses a
// placeholder, curl would indeed read the agent's value as a file (the
// premise, shown by running the refused notifier anyway, unchecked); and
// the places the docs use are safe: a notifier whose every value names a
// file the notify user can read posts that text, never the file.
func TestCurlPlaceholders(t *testing.T) {
	dir, _ := trustedDir(t)
	const curl = "/usr/bin/curl"
	if _, err := os.Stat(curl); err != nil {
		t.Skipf("no curl: %v", err)
	}
	secret := filepath.Join(dir, "secret")
	// A header line, so that -H @file sends it too.
	const content = "TOP-SECRET-CONTENT"
	if err := os.WriteFile(secret, []byte("X-Secret: "+content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every value the agent chooses tries to name the file, or to be an
	// option, or a glob.
	v := Values{Request: &approval.Shown{ID: "-K" + secret, Session: "@" + secret, Host: "[1-3]", Reason: "x@" + secret,
		Peer: approval.PeerInfo{User: "alice", UID: 1000}, RunAs: "root", Pipeline: [][]string{{"@" + secret}}}}

	t.Run("refused places do leak", func(t *testing.T) {
		for _, args := range [][]string{
			{"--data-urlencode", "{reason}"},         // the red team's: name x, file secret
			{"--data-urlencode", "reason: {reason}"}, // a prefix without '=' does not help
			{"-d", "{command}"},                      // -d @file
			{"-H", "{session}"},                      // -H @file: headers from the file
			{"--url-query", "q{reason}"},             // like --data-urlencode
		} {
			url, got := curlServer(t)
			argv := append([]string{curl, "-q", "-sS", "-m", "5"}, append(args, url+"/t")...)
			if err := Check("notify[0]", argv); err == nil {
				t.Errorf("Check accepted %q, where the agent's value names a file curl reads", args)
				continue
			}
			// Run it anyway, unchecked, to show why it is refused.
			var c command
			c.argv0 = curl
			for _, a := range argv[1:] {
				tp, err := parseArg(a)
				if err != nil {
					t.Fatal(err)
				}
				c.args = append(c.args, tp)
			}
			expanded := c.expand(v.escaped())
			out, _ := exec.Command(expanded[0], expanded[1:]...).CombinedOutput()
			leaked := strings.Contains(string(out), content)
			for _, r := range got() {
				leaked = leaked || strings.Contains(r.all, content)
			}
			if !leaked {
				t.Errorf("%q run unchecked as %q did not send the file (%q): the refusal's premise does not hold here", args, expanded[1:], got())
			}
		}
	})

	t.Run("accepted places are text", func(t *testing.T) {
		url, got := curlServer(t)
		argv := []string{curl, "-q", "-fsS", "-m", "5", "-g",
			"-H", "Title: agent-sudo: {session} on {host}",
			"--data-raw", "command: {command} (reason: {reason}, id {id})",
			"--data-urlencode", "reason={reason}",
			url + "/t/{host}"}
		s, err := Prepare([][]string{argv}, "nobody", time.Minute, "/usr/bin:/bin")
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecorder()
		r := NewRunner(slog.New(rec))
		r.Start(t.Context(), s, v)
		r.Wait()
		if strings.Contains(strings.Join(rec.lines, "\n"), "notifier failed") {
			t.Fatalf("the notifier failed: %q", rec.lines)
		}
		reqs := got()
		if len(reqs) != 1 || reqs[0].path != "/t/[1-3]" {
			t.Fatalf("the server got %d requests, want one (no glob): %q", len(reqs), reqs)
		}
		q := reqs[0]
		if strings.Contains(q.all, content) {
			t.Errorf("the file's content was sent: %+v", q)
		}
		if want := "agent-sudo: @" + secret + " on [1-3]"; q.title != want {
			t.Errorf("Title %q, want %q", q.title, want)
		}
		if want := "command: @" + secret + " (reason: x@" + secret + ", id -K" + secret + ")&reason=x%40" + strings.ReplaceAll(secret, "/", "%2F"); q.body != want {
			t.Errorf("body %q, want %q", q.body, want)
		}
	})
}
