package approval

import (
	"encoding/json"
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
