package audit

import (
	"strings"
	"testing"
)

// TestParseRecordIsStrict: a record is read one way only, at every depth,
// as the daemon and the web approver read their JSON (strictjson): a line
// with a repeated key (at the top, in the decision, in an approval) or a
// time that is not RFC 3339 is refused as corrupt, not read as its last
// value says, which audit show would print and a later reader might take
// otherwise; a key that matches a field only when case is folded is not
// that field (an unknown key, passed over as the format says of those).
func TestParseRecordIsStrict(t *testing.T) {
	prev := strings.Repeat("0", 64)
	head := `{"type":"decision","seq":3,"prev":"` + prev + `","time":"2026-11-29T04:00:00Z"`
	for _, c := range []struct {
		name, line string
		ok         bool
		verdict    string // the decision's verdict read, when ok
	}{
		{"well formed", head + `,"decision":{"verdict":"allow","by":"console"}}`, true, "allow"},
		{"repeated key at the top", head + `,"seq":4,"decision":{"verdict":"allow","by":"console"}}`, false, ""},
		{"repeated key inside", head + `,"decision":{"verdict":"deny","verdict":"allow","by":"console"}}`, false, ""},
		{"repeated key two deep", head + `,"decision":{"verdict":"allow","by":"c","approvals":[{"by":"a","by":"b","identity":"x"}]}}`, false, ""},
		{"case-folded key", head + `,"Decision":{"verdict":"allow","by":"console"}}`, true, ""},
		{"case-folded key inside", head + `,"decision":{"Verdict":"allow","by":"console"}}`, true, ""},
		{"time not RFC 3339", `{"type":"decision","seq":3,"prev":"` + prev + `","time":"2026-11-29T4:00:00Z","decision":{"verdict":"allow","by":"c"}}`, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := parseRecord([]byte(c.line))
			if c.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if c.ok {
				verdict := ""
				if r.Decision != nil {
					verdict = r.Decision.Verdict
				}
				if verdict != c.verdict {
					t.Errorf("verdict read %q, want %q", verdict, c.verdict)
				}
			}
			if !c.ok && err == nil {
				t.Fatalf("read %+v (decision %+v), want it refused", r, r.Decision)
			}
		})
	}
}
