package approval

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// FuzzDecodeConsoleLine: a console line is decoded only when it is one
// JSON object with no repeated key and no lone surrogate escape, and then
// with encoding/json's meaning.
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
		var want Message
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("decoded %q, encoding/json: %v", line, err)
		}
		if m.Type != want.Type || m.ID != want.ID || m.Hash != want.Hash || m.Decision != want.Decision || m.Note != want.Note || m.Grant != want.Grant || m.Run != want.Run {
			t.Fatalf("decoded %q as %+v, encoding/json as %+v", line, m, want)
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
