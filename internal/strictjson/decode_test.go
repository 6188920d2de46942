package strictjson

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// inner and outer stand for the approver channel's nested messages
// (a decide message's signed statement and assertion).
type inner struct {
	Decision string    `json:"decision"`
	Expires  time.Time `json:"expires"`
	Sig      []byte    `json:"signature"`
}

type outer struct {
	Type     string   `json:"type"`
	Decision string   `json:"decision"`
	Signed   *inner   `json:"signed"`
	List     [][]byte `json:"list"`
}

// TestUnmarshalIsStrict: every reading that encoding/json takes and one
// strict reading does not (issue 31, finding 7): keys differing only in
// case or by Unicode folding are not the field, a key given twice at any
// depth is refused, base64 has one spelling, and times are RFC 3339.
func TestUnmarshalIsStrict(t *testing.T) {
	tests := []struct {
		name, in string
		want     outer  // when err is ""
		err      string // a part of the error
	}{
		{"plain", `{"type":"decide","decision":"deny"}`, outer{Type: "decide", Decision: "deny"}, ""},
		{"Decision after decision", `{"decision":"deny","Decision":"allow_once"}`, outer{Decision: "deny"}, ""},
		{"DECISION after decision", `{"decision":"deny","DECISION":"allow_once"}`, outer{Decision: "deny"}, ""},
		{"long s folded, escaped", `{"decision":"deny","deci\u017fion":"allow_once"}`, outer{Decision: "deny"}, ""},
		{"long s folded, raw", `{"decision":"deny","deciſion":"allow_once"}`, outer{Decision: "deny"}, ""},
		{"Decision alone", `{"Decision":"allow_once"}`, outer{}, ""},
		{"TYPE after type", `{"type":"revoke","TYPE":"decide"}`, outer{Type: "revoke"}, ""},
		{"duplicate at the top", `{"decision":"deny","decision":"allow_once"}`, outer{}, `duplicate object member name "decision"`},
		{"duplicate, escaped", `{"decision":"deny","\u0064ecision":"allow_once"}`, outer{}, `duplicate object member name "decision"`},
		{"duplicate nested", `{"signed":{"decision":"deny","decision":"allow_once"}}`, outer{}, `duplicate object member name "decision"`},
		{"duplicate nested bytes", `{"signed":{"signature":"AQID","signature":"BAUG"}}`, outer{}, `duplicate object member name "signature"`},
		{"lone surrogate", `{"type":"\ud800"}`, outer{}, "surrogate"},
		{"bad UTF-8", "{\"type\":\"\xff\"}", outer{}, "UTF-8"},
		{"trailing data", `{"type":"x"} {}`, outer{}, "after top-level value"},
		{"base64", `{"signed":{"signature":"AQID"},"list":["AA==",null]}`, outer{Signed: &inner{Sig: []byte{1, 2, 3}}, List: [][]byte{{0}, nil}}, ""},
		{"base64 escaped newline", `{"signed":{"signature":"AQ\nID"}}`, outer{}, "line break"},
		{"base64 escaped carriage return", `{"signed":{"signature":"AQID\r"}}`, outer{}, "line break"},
		{"base64 nonzero padding bits", `{"signed":{"signature":"AR=="}}`, outer{}, "zero unused bits"},
		{"base64 nonzero padding bits, in a list", `{"list":["AB=="]}`, outer{}, "zero unused bits"},
		{"base64 without padding", `{"signed":{"signature":"AA"}}`, outer{}, "base64"},
		{"base64url", `{"signed":{"signature":"-_-_"}}`, outer{}, "base64"},
		{"time", `{"signed":{"expires":"2026-11-27T18:05:00+01:00"}}`, outer{Signed: &inner{Expires: time.Date(2026, 11, 27, 18, 5, 0, 0, time.FixedZone("", 3600))}}, ""},
		{"time offset +24:00", `{"signed":{"expires":"2026-11-27T18:05:00+24:00"}}`, outer{}, "timezone hour out of range"},
		{"time offset -99:00", `{"signed":{"expires":"2026-11-27T18:05:00-99:00"}}`, outer{}, "out of range"},
		{"time offset minute 60", `{"signed":{"expires":"2026-11-27T18:05:00+01:60"}}`, outer{}, "timezone minute out of range"},
		{"time one-digit hour", `{"signed":{"expires":"2026-11-27T8:05:00Z"}}`, outer{}, "parsing time"},
		{"time comma", `{"signed":{"expires":"2026-11-27T18:05:00,5Z"}}`, outer{}, "parsing time"},
		{"time lower-case t", `{"signed":{"expires":"2026-11-27t18:05:00Z"}}`, outer{}, "parsing time"},
		{"time space", `{"signed":{"expires":"2026-11-27 18:05:00Z"}}`, outer{}, "parsing time"},
		{"time no offset", `{"signed":{"expires":"2026-11-27T18:05:00"}}`, outer{}, "parsing time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got outer
			err := Unmarshal([]byte(tt.in), &got)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Unmarshal(%s) = %+v, %v; want an error with %q", tt.in, got, err, tt.err)
				}
			case err != nil:
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			default:
				a, _ := json.Marshal(got)
				b, _ := json.Marshal(tt.want)
				if string(a) != string(b) {
					t.Fatalf("Unmarshal(%s) = %s, want %s", tt.in, a, b)
				}
			}
		})
	}
}

// FuzzUnmarshalBytes: base64 that Unmarshal takes has one spelling, the
// one encoding/base64 writes.
func FuzzUnmarshalBytes(f *testing.F) {
	for _, s := range []string{"AQID", "AR==", "AA==", "AQ\\nID", "", "QUJD\\r\\nRA==", "\\u0041Q=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v struct {
			B []byte `json:"b"`
		}
		in := `{"b":"` + s + `"}`
		if Unmarshal([]byte(in), &v) != nil {
			return
		}
		var text string
		if err := json.Unmarshal([]byte(`"`+s+`"`), &text); err != nil {
			t.Fatalf("Unmarshal took %s, which is not a JSON string: %v", in, err)
		}
		if got := base64.StdEncoding.EncodeToString(v.B); got != text {
			t.Fatalf("Unmarshal took %q as %x, which is spelt %q", text, v.B, got)
		}
	})
}

// FuzzUnmarshalTime: a time Unmarshal takes can be written back (issue 31,
// finding 6: a statement whose expiry cannot be encoded had an empty
// challenge).
func FuzzUnmarshalTime(f *testing.F) {
	for _, s := range []string{"2026-11-27T18:05:00Z", "2026-11-27T18:05:00+24:00", "2026-11-27T18:05:00.123456789-23:59", "0000-01-01T00:00:00+23:59"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v struct {
			T time.Time `json:"t"`
		}
		in, err := json.Marshal(map[string]string{"t": s})
		if err != nil {
			return
		}
		if Unmarshal(in, &v) != nil {
			return
		}
		if _, err := json.Marshal(v.T); err != nil {
			t.Fatalf("Unmarshal took %q, which cannot be written back: %v", s, err)
		}
	})
}
