package termtext_test

import (
	"encoding/json"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

func TestASCIIJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":"b"}`, `{"a":"b"}`},
		{`{"a":"café"}`, `{"a":"caf\u00e9"}`},
		{`{"a":"` + "\u202e" + `x"}`, `{"a":"\u202ex"}`},
		{`{"a":"😀"}`, `{"a":"\ud83d\ude00"}`},
		{"{\"a\":\"\xff\"}", `{"a":"\ufffd"}`},
		{"{\"a\":\r\"b\",\t\"c\":1}\n", `{"a": "b", "c":1} `},
		{"{\"a\":\"\x7f\"}", `{"a":"\u007f"}`},
		{"{\"a\":\"é\x7f\"}", `{"a":"\u00e9\u007f"}`},
		{"", ""},
	}
	for _, tt := range tests {
		got := string(termtext.ASCIIJSON([]byte(tt.in)))
		if got != tt.want {
			t.Errorf("ASCIIJSON(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if json.Valid([]byte(tt.in)) && !json.Valid([]byte(got)) {
			t.Errorf("ASCIIJSON(%q) = %q is not valid JSON", tt.in, got)
		}
	}
}

// TestASCIIJSONSameValue: whatever encoding/json writes, ASCIIJSON's
// rewrite decodes to the same value.
func TestASCIIJSONSameValue(t *testing.T) {
	for _, s := range []string{"plain", "café ☕ 😀", "\u202e\u200b\x7f\x00\t\n", "\xff\xfe", "a\\b\"c"} {
		b, err := json.Marshal(map[string]string{s: s})
		if err != nil {
			t.Fatal(err)
		}
		var got, want map[string]string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(termtext.ASCIIJSON(b), &got); err != nil {
			t.Fatalf("ASCIIJSON(%s) does not decode: %v", b, err)
		}
		if got[s] != want[s] || len(got) != 1 {
			t.Errorf("ASCIIJSON(%s) decodes to %q, want %q", b, got, want)
		}
	}
}

func FuzzASCIIJSON(f *testing.F) {
	f.Add([]byte(`{"a":"café\u202e"}`))
	f.Add([]byte("{\"a\":\r\"\x7f\xff\"}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := termtext.ASCIIJSON(b)
		for _, c := range out {
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("ASCIIJSON(%q) = %q has byte %#x", b, out, c)
			}
		}
		if json.Valid(b) && !json.Valid(out) {
			t.Fatalf("ASCIIJSON(%q) = %q is not valid JSON", b, out)
		}
	})
}
