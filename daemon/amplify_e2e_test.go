package daemon_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// TestE2ERefusedRequestsBounded reproduces issue 10 M5's amplification over
// the wire: hostile requests of about 1 MB (a tenth of that under -race:
// hostileSize), refused, sent in parallel. Each must add a bounded number
// of bytes to the audit log and to the daemon's log (its size, SHA-256 and
// a prefix are recorded, not the whole request).
func TestE2ERefusedRequestsBounded(t *testing.T) {
	heavy(t) // it moves 18 MB through the daemon (1.8 MB under -race)
	// A generous read_timeout: 18 parallel lines of up to 1 MB on a loaded
	// machine can take seconds to read.
	d := daemontest.Start(t, daemontest.Config{ReadTimeout: "60s"})
	big := strings.Repeat("A", hostileSize())
	kinds := map[string]func(id string) string{
		// Refused when planned: no such program; the argument is huge.
		"huge argument": func(id string) string {
			return line(map[string]any{"id": id, "pipeline": [][]string{{"no-such-program-xyz", big}}})
		},
		// Refused when planned; the program name itself is huge and is
		// quoted in the refusal.
		"huge program name": func(id string) string {
			return line(map[string]any{"id": id, "pipeline": [][]string{{"no-such-" + big}}})
		},
		// Refused when decoded: the reason is over its limit.
		"huge invalid request": func(id string) string {
			return line(map[string]any{"id": id, "pipeline": [][]string{{"true"}}, "reason": big})
		},
	}
	auditPath := d.AuditLog
	sizeOf := func() int64 {
		fi, err := os.Stat(auditPath)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	auditBefore, logBefore := sizeOf(), len(d.Logs.String())
	const perKind = 6
	lines := map[string]string{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for kind, mk := range kinds {
		for i := range perKind {
			id := strings.ReplaceAll(kind, " ", "-") + "-" + strconv.Itoa(i)
			l := mk(id)
			lines[id] = l
			wg.Go(func() {
				resp, err := sendLine(d.Socket, l)
				if err != nil || !strings.Contains(resp, `"status":"error"`) {
					mu.Lock()
					t.Errorf("%s: %v %.300s", id, err, resp)
					mu.Unlock()
				}
				// The answer is bounded too: a refusal that quotes a huge
				// value must not send the agent twice what it sent.
				if len(resp) > 8<<10 {
					mu.Lock()
					t.Errorf("%s: the refusal is %d bytes long, more than 8 KiB", id, len(resp))
					mu.Unlock()
				}
				// A cut message says so, as docs/protocol.md promises.
				if strings.HasPrefix(id, "huge-program-name") && !strings.Contains(resp, "bytes in all)") {
					mu.Lock()
					t.Errorf("%s: the refusal does not say it was cut: %.300s", id, resp)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	n := int64(len(lines))
	if grew := sizeOf() - auditBefore; grew > n*16<<10 {
		t.Errorf("audit log grew by %d bytes for %d refused requests of %d bytes: more than 16 KiB each", grew, n, len(big))
	}
	if grew := len(d.Logs.String()) - logBefore; grew > int(n)*8<<10 {
		t.Errorf("daemon log grew by %d bytes for %d refused requests: more than 8 KiB each", grew, n)
	}
	// Each refusal records the request's size and hash, and a prefix.
	f, err := os.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	seen := 0
	for sc.Scan() {
		var rec struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Request struct {
				Refused   string     `json:"refused"`
				Pipeline  [][]string `json:"pipeline"`
				RawBytes  int        `json:"raw_bytes"`
				RawSHA256 string     `json:"raw_sha256"`
				RawPrefix string     `json:"raw_prefix"`
			} `json:"request"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		l, ok := lines[rec.ID]
		if !ok || rec.Type != "request" {
			continue
		}
		seen++
		raw := l + "\n"
		sum := sha256.Sum256([]byte(raw))
		q := rec.Request
		if q.RawBytes != len(raw) || q.RawSHA256 != hex.EncodeToString(sum[:]) || q.RawPrefix != raw[:1024] || q.Pipeline != nil {
			t.Errorf("%s: raw_bytes %d (want %d), raw_sha256 %s (want %x), prefix %d bytes, pipeline recorded: %v",
				rec.ID, q.RawBytes, len(raw), q.RawSHA256, sum, len(q.RawPrefix), q.Pipeline != nil)
		}
		if q.Refused == "" || len(q.Refused) > 2200 {
			t.Errorf("%s: refusal reason of %d bytes", rec.ID, len(q.Refused))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != len(lines) {
		t.Errorf("%d refusals audited, want %d", seen, len(lines))
	}
}

// TestE2ERateLimitPerUser: a non-root user that opens more connections
// than max_requests_per_minute in a burst is answered "rate limited"
// without being read; root and other users are not affected.
func TestE2ERateLimitPerUser(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	group, _ := daemontest.AddGroup(t, "rl")
	fast := daemontest.AddUser(t, "rlf", group)
	other := daemontest.AddUser(t, "rlo", group)
	// Two a minute: a token comes back every 30 s, far longer than the
	// test takes, so the third connection in a row is always refused.
	d := daemontest.Start(t, daemontest.Config{SocketGroup: group, Extra: "max_requests_per_minute = 2"})
	for i := range 2 {
		if code, out, _ := cliAs(t, d, fast, "status"); code != 0 {
			t.Fatalf("request %d of the allowed burst: %d %q", i+1, code, out)
		}
	}
	code, out, _ := cliAs(t, d, fast, "status")
	want := regexp.MustCompile(`rate limited: uid ` + strconv.Itoa(int(fast.UID)) + ` opened more than 2 connections in the last minute \(max_requests_per_minute\); try again in [1-9][0-9]?s`)
	if code == 0 || !want.MatchString(out) {
		t.Fatalf("3rd request: %d %q", code, out)
	}
	if code, out, _ := cliAs(t, d, other, "status"); code != 0 {
		t.Fatalf("another user: %d %q", code, out)
	}
	for range 10 {
		if code, out, _ := cliAs(t, d, nil, "status"); code != 0 {
			t.Fatalf("root: %d %q", code, out)
		}
	}
}

// sendLine sends one line and returns the response line; unlike
// daemontest's Send it may be called from any goroutine.
func sendLine(socket, l string) (string, error) {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(120 * time.Second))
	if _, err := c.Write([]byte(l + "\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}
