package strictjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestObject(t *testing.T) {
	tests := []struct {
		line string
		kind Kind
		err  string // "" accepts
	}{
		{`{"a":1,"b":{"a":2}}`, 0, ""},
		{` {"a":1} ` + "\r", 0, ""},
		{`{"decision":"deny","decision":"allow_once"}`, Duplicate, `key "decision" appears more than once; each key may appear only once`},
		{`{"a":1,"\u0061":2}`, Duplicate, `key "a" appears more than once; each key may appear only once`},
		{``, Empty, "the line is empty; send one JSON object"},
		{"{\"a\":\"\xff\"}", BadUTF8, "the line is not valid UTF-8 (first bad byte at offset 6)"},
		{`[1]`, NotObject, "the line must be a JSON object, got an array"},
		{`{"a":1} {}`, Syntax, "unexpected data after the JSON object at offset 7; send exactly one object per line"},
		{`{"a":1`, Syntax, "unexpected end of input at byte offset 6: the JSON object is not complete"},
	}
	for _, tt := range tests {
		_, err := Object([]byte(tt.line))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("Object(%q): %v", tt.line, err)
		case tt.err != "" && err == nil:
			t.Errorf("Object(%q) accepted, want %s", tt.line, tt.err)
		case tt.err != "" && (err.Kind != tt.kind || err.Error() != tt.err):
			t.Errorf("Object(%q): kind %d %q, want kind %d %q", tt.line, err.Kind, err.Error(), tt.kind, tt.err)
		}
	}
}

func TestLoneSurrogate(t *testing.T) {
	tests := []struct {
		raw  string
		off  int
		esc  string
		note string
	}{
		{`"x\ud800x"`, 2, `\ud800`, "a high surrogate alone"},
		{`"\udc00"`, 1, `\udc00`, "a low surrogate alone"},
		{`"\uDFFF"`, 1, `\uDFFF`, "upper-case hex"},
		{`"\ud800\u0041"`, 1, `\ud800`, "a high surrogate before a non-surrogate"},
		{`"\ud800\ud800\udc00"`, 1, `\ud800`, "two highs, then a low: the first is alone"},
		{`"\udc00\ud800"`, 1, `\udc00`, "a low before a high is no pair"},
		{`"\ud83d\ude00 \ud800"`, 14, `\ud800`, "after a good pair"},
		{`"\ud800"`[:7], 1, `\ud800`, "at the end of the text"},
		{`"\ud83d\ude00"`, -1, "", "a pair is a character"},
		{`"\\ud800"`, -1, "", "an escaped backslash, then letters"},
		{`"\\\ud800"`, 3, `\ud800`, "an escaped backslash, then the escape"},
		{`"\u00e9\ud7ff\ue000"`, -1, "", "characters next to the surrogate range"},
		{`{"a\udfff":["\"",1]}`, 3, `\udfff`, "in a key"},
	}
	for _, tt := range tests {
		off, esc := LoneSurrogate([]byte(tt.raw))
		if off != tt.off || esc != tt.esc {
			t.Errorf("%s: LoneSurrogate(%s) = %d, %q; want %d, %q", tt.note, tt.raw, off, esc, tt.off, tt.esc)
		}
	}
}

// FuzzObject: what Object accepts is valid JSON whose keys are all
// different, and a line without a lone surrogate (nor U+FFFD of its own)
// decodes with encoding/json to strings without U+FFFD, so nothing was
// replaced.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{"a":"b","c":["\ud83d\ude00",{"a":1}]}`, `{"a":"\ud800"}`, `{"a":1,"a":2}`, `{"\\ud800":"\\"}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fields, err := Object(line)
		if err != nil {
			return
		}
		if !json.Valid(line) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("accepted %q, encoding/json: %v", line, err)
		}
		if len(m) != len(fields) {
			t.Fatalf("%q: %d members, encoding/json sees %d keys", line, len(fields), len(m))
		}
		lower := bytes.ToLower(line)
		if off, _ := LoneSurrogate(line); off < 0 && !bytes.Contains(lower, []byte(`\ufffd`)) && !bytes.Contains(line, []byte("\ufffd")) {
			if b, _ := json.Marshal(m); strings.Contains(string(b), "\ufffd") {
				t.Fatalf("%q: no lone surrogate found, but decoding replaced something: %s", line, b)
			}
		}
	})
}
