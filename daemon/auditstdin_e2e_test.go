package daemon_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EAuditStdin runs requests with stdin through the real daemon with
// audit_stdin off (the default) and on: the request record always has the
// stdin's size and SHA-256, and its content (base64) only when audit_stdin
// = true. "agent-sudo audit show" prints the size and hash, and the
// recorded content escaped (text by line, binary as a hexdump), never a
// raw control or bidi character; "audit verify" passes.
func TestE2EAuditStdin(t *testing.T) {
	t.Parallel()
	text := []byte("new content\n\x1b]0;pwned\x07 \u202eevil\tend\n")
	binary := []byte("\x00\x01\xff\x1b[2Jbinary")
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("audit_stdin=%v", on), func(t *testing.T) {
			d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll, Extra: fmt.Sprintf("audit_stdin = %v", on)})
			logPath := d.AuditLog
			inputs := map[string][]byte{"st-text": text, "st-bin": binary}
			for _, id := range []string{"st-text", "st-bin"} {
				resp := d.Run(&proto.Request{ID: id, Pipeline: [][]string{{"cat"}}, Privileged: true, Stdin: inputs[id]})
				if resp.Status != proto.StatusOK || !bytes.Equal(resp.Stdout, inputs[id]) {
					t.Fatalf("%s: %+v", id, resp)
				}
			}

			log, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			found := map[string]bool{}
			for _, l := range bytes.Split(log, []byte("\n")) {
				var rec struct {
					Type    string                     `json:"type"`
					ID      string                     `json:"id"`
					Request map[string]json.RawMessage `json:"request"`
				}
				if len(l) == 0 {
					continue
				}
				if err := json.Unmarshal(l, &rec); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				in, ok := inputs[rec.ID]
				if rec.Type != "request" || !ok {
					continue
				}
				found[rec.ID] = true
				sum := sha256.Sum256(in)
				if string(rec.Request["stdin_bytes"]) != fmt.Sprint(len(in)) || string(rec.Request["stdin_sha256"]) != `"`+hex.EncodeToString(sum[:])+`"` {
					t.Errorf("%s: stdin_bytes %s, stdin_sha256 %s", rec.ID, rec.Request["stdin_bytes"], rec.Request["stdin_sha256"])
				}
				content, has := rec.Request["stdin"]
				if want := `"` + base64.StdEncoding.EncodeToString(in) + `"`; on && string(content) != want {
					t.Errorf("%s: stdin %s, want %s", rec.ID, content, want)
				}
				if !on && has {
					t.Errorf("%s: the content is recorded with audit_stdin off: %s", rec.ID, content)
				}
			}
			if len(found) != 2 {
				t.Fatalf("request records found for %v, want st-text and st-bin", found)
			}
			if !on && (bytes.Contains(log, []byte("new content")) || bytes.Contains(log, []byte(base64.StdEncoding.EncodeToString(text)[:16]))) {
				t.Error("the log holds the stdin content with audit_stdin off")
			}

			code, out, errOut := auditCLI("audit", "show", "--log", logPath, "st-text")
			textSum := sha256.Sum256(text)
			if code != 0 || !strings.Contains(out, fmt.Sprintf("  stdin:          %d bytes, sha256 %x\n", len(text), textSum)) {
				t.Fatalf("audit show st-text: %d %q\n%s", code, errOut, out)
			}
			if strings.ContainsAny(out, "\x1b\x07\u202e") {
				t.Errorf("audit show prints a raw control or bidi character:\n%q", out)
			}
			wantText := "  stdin (text):   | new content\n                  | \\x1b]0;pwned\\x07 \\u202eevil\\tend\n"
			if on != strings.Contains(out, wantText) {
				t.Errorf("audit show st-text (audit_stdin %v): want the content %v:\n%s", on, on, out)
			}
			code, out, errOut = auditCLI("audit", "show", "--log", logPath, "st-bin")
			wantHex := "  stdin (hex):    00000000  00 01 ff 1b 5b 32 4a 62  69 6e 61 72 79           |....[2Jbinary|\n"
			if code != 0 || strings.ContainsAny(out, "\x00\x1b") || on != strings.Contains(out, wantHex) {
				t.Errorf("audit show st-bin (audit_stdin %v): %d %q\n%q", on, code, errOut, out)
			}

			if code, out, errOut := auditCLI("audit", "verify", "--log", logPath); code != 0 || !strings.HasPrefix(out, "ok: ") {
				t.Fatalf("audit verify: %d %q %q", code, out, errOut)
			}
		})
	}
}
