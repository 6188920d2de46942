package daemon

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// FuzzDecodeConsoleLine: a console line is decoded only when it is one
// JSON object with no repeated key and no lone surrogate escape, and what
// it decodes to reads back the same once written again, so that nothing in
// it has two readings (issue 31, finding 7: encoding/json's reading of
// "Decision" as "decision" is not the channel's).
func FuzzDecodeConsoleLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"decide","id":"r1","hash":"00","decision":"deny","note":"no"}`,
		`{"type":"decide","decision":"deny","decision":"allow_once"}`,
		`{"type":"revoke","grant":"g1\ud800"}`,
		`{"type":"watch"} `,
		`{"type":"signed_only"}`,
		`{"type":"passkeys","passkeys":[{"name":"alice","rp_id":"localhost","origins":["https://localhost:8443"],"user_id":"AQ==","credential_id":"Ag==","public_key":"Aw=="}]}`,
		`{"type":"passkeys","passkeys":[],"passkeys":null,"error":"x"}`,
		`[]`,
		signedLine,
		`{"type":"decide","id":"x","hash":"h","decision":"deny","Decision":"allow_once"}`,
		`{"type":"revoke","grant":"g1","TYPE":"decide"}`,
		`{"type":"decide","signed":{"statement":{"decision":"deny","decision":"allow_once"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decodeConsoleLine(line)
		if err != nil {
			return
		}
		if _, e := strictjson.Object(line); e != nil {
			t.Fatalf("decoded %q, which is not a strict object: %v", line, e)
		}
		if off, _ := strictjson.LoneSurrogate(line); off >= 0 {
			t.Fatalf("decoded %q, which has a lone surrogate at %d", line, off)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("decoded %q, which cannot be written back: %v", line, err)
		}
		again, err := decodeConsoleLine(b)
		if err != nil {
			t.Fatalf("decoded %q, but not its re-encoding %s: %v", line, b, err)
		}
		if b2, err := json.Marshal(again); err != nil || string(b2) != string(b) {
			t.Fatalf("decoded %q as %s, which reads back as %s (%v)", line, b, b2, err)
		}
	})
}

// TestReadConsoleLine: a line of exactly maxConsoleLine bytes, newline
// included, is read; one byte more is reported as too long, read to its
// end, and the next line is read whole; a last line without a newline is a
// line.
func TestReadConsoleLine(t *testing.T) {
	fits := strings.Repeat("a", maxConsoleLine-1)
	over := strings.Repeat("b", maxConsoleLine)
	br := bufio.NewReaderSize(strings.NewReader(fits+"\n"+over+"\n"+"next\n"+"last"), 64<<10)
	for i, want := range []struct {
		line string
		long int64
	}{{fits, 0}, {"", maxConsoleLine + 1}, {"next", 0}, {"last", 0}} {
		line, long, err := readConsoleLine(br)
		if err != nil || string(line) != want.line || long != want.long {
			t.Fatalf("line %d: %d bytes, long %d, err %v; want %d bytes, long %d", i, len(line), long, err, len(want.line), want.long)
		}
	}
	if _, _, err := readConsoleLine(br); err != io.EOF {
		t.Fatalf("after the last line: %v, want io.EOF", err)
	}
}
