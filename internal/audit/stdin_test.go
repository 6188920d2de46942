package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// TestStdinRecorded: a request's stdin is recorded as its size and SHA-256,
// and its content (standard base64, in the stdin field) only with
// Options.Stdin (audit_stdin); the line stays ASCII and the chain verifies.
// A refused request records the content of a short line, never of a line
// too long to record in full; a request without stdin has no stdin fields.
func TestStdinRecorded(t *testing.T) {
	input := []byte("secret line\n\x00\xff\x1b[31m\u202e")
	sum := sha256.Sum256(input)
	b64 := base64.StdEncoding.EncodeToString(input)
	ctx := context.Background()

	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		t.Run(name, func(t *testing.T) {
			path := logPath(t)
			l := openLog(t, path, Options{Stdin: on})
			req := testRequest("with-stdin")
			req.Stdin = input
			if _, err := l.Received(ctx, req, testPeer); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Received(ctx, testRequest("without-stdin"), testPeer); err != nil {
				t.Fatal(err)
			}
			short := testRequest("refused-short")
			short.Stdin = input
			if err := l.Refused(ctx, Refusal{Request: short, Raw: []byte(`{"id":"refused-short"}`), Reason: "no"}); err != nil {
				t.Fatal(err)
			}
			long := testRequest("refused-long")
			long.Stdin = input
			longRaw := []byte(`{"id":"refused-long","x":"` + strings.Repeat("y", MaxRefusedRequestBytes) + `"}`)
			if err := l.Refused(ctx, Refusal{Request: long, Raw: longRaw, Reason: "too long"}); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}

			ls := lines(t, path)
			if len(ls) != 4 {
				t.Fatalf("%d lines, want 4", len(ls))
			}
			wantContent := map[string]bool{"with-stdin": on, "refused-short": on, "refused-long": false}
			for _, ln := range ls {
				for _, c := range ln {
					if c < 0x20 || c > 0x7e {
						t.Fatalf("line is not printable ASCII (byte %#x): %s", c, ln)
					}
				}
				var raw struct {
					ID      string                     `json:"id"`
					Request map[string]json.RawMessage `json:"request"`
				}
				if err := json.Unmarshal(ln, &raw); err != nil {
					t.Fatal(err)
				}
				var r Record
				if err := json.Unmarshal(ln, &r); err != nil {
					t.Fatal(err)
				}
				q := r.Request
				if raw.ID == "without-stdin" {
					for _, k := range []string{"stdin", "stdin_bytes", "stdin_sha256"} {
						if _, ok := raw.Request[k]; ok {
							t.Errorf("%s: a request without stdin has %q: %s", raw.ID, k, ln)
						}
					}
					continue
				}
				if q.StdinBytes != len(input) || q.StdinSHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("%s: stdin_bytes %d, stdin_sha256 %s; want %d, %x", raw.ID, q.StdinBytes, q.StdinSHA256, len(input), sum)
				}
				got, has := raw.Request["stdin"]
				switch {
				case wantContent[raw.ID] && (!has || string(got) != `"`+b64+`"` || !bytes.Equal(q.Stdin, input)):
					t.Errorf("%s: stdin %s, want %q: %s", raw.ID, got, b64, ln)
				case !wantContent[raw.ID] && (has || q.Stdin != nil):
					t.Errorf("%s: the content is recorded although it must not be: %s", raw.ID, ln)
				}
				if !wantContent[raw.ID] && (bytes.Contains(ln, []byte("secret")) || bytes.Contains(ln, []byte(b64[:12]))) {
					t.Errorf("%s: the line holds the content: %s", raw.ID, ln)
				}
			}
			res, err := Verify(ctx, path)
			if err != nil || res.Records != 4 {
				t.Fatalf("Verify: %+v, %v", res, err)
			}
		})
	}
}
