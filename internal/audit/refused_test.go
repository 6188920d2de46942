package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/proto"
)

func TestBound(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 4, "abcd… (cut: 11 bytes in all)"},
		{"ééé", 3, "é… (cut: 6 bytes in all)"}, // never cuts inside a character
		{strings.Repeat("x", 5000), 2048, strings.Repeat("x", 2048) + "… (cut: 5000 bytes in all)"},
	}
	for _, tt := range tests {
		if got := Bound(tt.s, tt.max); got != tt.want {
			t.Errorf("Bound(%.20q, %d) = %.60q, want %.60q", tt.s, tt.max, got, tt.want)
		}
	}
}

// TestRefusedBounded: the record of a refused request of up to 1 MB stays
// small: size, hash and a prefix instead of the pipeline; a short one keeps
// its decoded fields and gets its size and hash too.
func TestRefusedBounded(t *testing.T) {
	path := logPath(t)
	l := openLog(t, path, Options{})
	ctx := context.Background()
	big := strings.Repeat("A", 1<<20-200)
	long := &proto.Request{ID: "long", Pipeline: [][]string{{"x", big}}}
	longRaw := []byte(`{"id":"long","pipeline":[["x","` + big + `"]]}` + "\n")
	short := &proto.Request{ID: "short", Pipeline: [][]string{{"x", "y"}}, Reason: "why"}
	shortRaw := []byte(`{"id":"short","pipeline":[["x","y"]],"reason":"why"}` + "\n")
	if err := l.Refused(ctx, Refusal{ID: "long", Request: long, Raw: longRaw, Reason: "no such program " + big}); err != nil {
		t.Fatal(err)
	}
	if err := l.Refused(ctx, Refusal{ID: "short", Request: short, Raw: shortRaw, Reason: "nope"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Refused(ctx, Refusal{Raw: []byte(big), Reason: "invalid JSON"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var recs []Record
	for _, ln := range lines {
		if len(ln) > 8<<10 {
			t.Errorf("a refusal record of %d bytes: %.200s", len(ln), ln)
		}
		var r Record
		if err := json.Unmarshal([]byte(ln), &r); err != nil {
			t.Fatal(err)
		}
		if r.Type == TypeRequest {
			recs = append(recs, r)
		}
	}
	if len(recs) != 3 {
		t.Fatalf("%d request records, want 3", len(recs))
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	lr, sr, jr := recs[0].Request, recs[1].Request, recs[2].Request
	if lr.RawBytes != len(longRaw) || lr.RawSHA256 != sum(longRaw) || lr.RawPrefix != string(longRaw[:RawPrefixBytes]) ||
		lr.Pipeline != nil || !strings.HasSuffix(lr.Refused, fmt.Sprintf("… (cut: %d bytes in all)", len("no such program ")+len(big))) || len(lr.Refused) > MaxRefusedReasonBytes+64 {
		t.Errorf("long refusal: %.300q", fmt.Sprintf("%+v", lr))
	}
	if sr.RawBytes != len(shortRaw) || sr.RawSHA256 != sum(shortRaw) || sr.RawPrefix != "" || sr.Reason != "why" || len(sr.Pipeline) != 1 || sr.Refused != "nope" {
		t.Errorf("short refusal: %+v", sr)
	}
	if jr.RawBytes != len(big) || jr.RawPrefix != big[:RawPrefixBytes] {
		t.Errorf("undecodable refusal: bytes %d prefix %d", jr.RawBytes, len(jr.RawPrefix))
	}
}
