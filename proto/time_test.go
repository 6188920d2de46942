package proto

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParseRFC3339 accepts exactly RFC 3339's date-time: every value
// time.Parse accepts beyond it (offset hour 24, a one-digit hour, a ','
// before the fraction) is refused with the byte where it goes wrong
// (issue 21: the audit log could not write a +24:00 offset back, so such a
// request left no record).
func TestParseRFC3339(t *testing.T) {
	accepts := []struct {
		in   string
		want time.Time
	}{
		{"2026-02-13T14:30:00Z", time.Date(2026, 2, 13, 14, 30, 0, 0, time.UTC)},
		{"2026-02-13T15:30:00.25+01:00", time.Date(2026, 2, 13, 14, 30, 0, 250e6, time.UTC)},
		{"2026-02-13T14:30:00.123456789Z", time.Date(2026, 2, 13, 14, 30, 0, 123456789, time.UTC)},
		{"2026-02-13T14:30:00.1-23:59", time.Date(2026, 2, 14, 14, 29, 0, 100e6, time.UTC)},
		{"2026-02-14T14:29:00+23:59", time.Date(2026, 2, 13, 14, 30, 0, 0, time.UTC)},
		{"2026-02-13T14:30:00-00:00", time.Date(2026, 2, 13, 14, 30, 0, 0, time.UTC)},
		{"2024-02-29T23:59:59Z", time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)},
		{"0000-01-01T00:00:00Z", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"9999-12-31T23:59:59.999999999Z", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	}
	for _, a := range accepts {
		got, err := parseRFC3339(a.in)
		if err != nil || !got.Equal(a.want) {
			t.Errorf("parseRFC3339(%q) = %v, %v; want %v", a.in, got, err, a.want)
			continue
		}
		// What is accepted can be written back, as the audit log does.
		if _, err := got.MarshalJSON(); err != nil {
			t.Errorf("%q: accepted, but MarshalJSON fails: %v", a.in, err)
		}
	}
	refuses := []struct{ in, want string }{
		{"2026-11-28T14:39:37+24:00", "at byte 20: the offset hour is 24; it must be 00 to 23"},
		{"2026-11-28T14:39:37-24:00", "at byte 20: the offset hour is 24; it must be 00 to 23"},
		{"2026-11-28T14:39:37+01:60", "at byte 23: the offset minute is 60; it must be 00 to 59"},
		{"2026-11-28T14:39:37+0100", "at byte 22: want ':' in the offset"},
		{"2026-02-13T9:40:00-05:00", "at byte 12: want 2 digits for the hour"},
		{"2026-02-13T09:40:00,5Z", "at byte 19: a fraction of a second follows a '.', not a ','"},
		{"2026-02-13T09:40:00.Z", "at byte 20: want 1 to 9 digits of a fraction of a second after the '.'"},
		{"2026-02-13T09:40:00.1234567891Z", "at byte 29: a fraction of a second has at most 9 digits (nanoseconds)"},
		{"2026-02-13t14:30:00Z", "at byte 10: want 'T' between the date and the time (an upper-case T)"},
		{"2026-02-13 14:30:00Z", "at byte 10: want 'T' between the date and the time (an upper-case T)"},
		{"2026-02-13T14:30:00z", `at byte 19: want the time zone: "Z" or an offset such as "+01:00"`},
		{"2026-02-13T14:30:00", `at byte 19: want the time zone: "Z" or an offset such as "+01:00"`},
		{"2026-02-13T14:30:00Z ", "at byte 20: unexpected text after the time zone"},
		{"2026-02-13T24:00:00Z", "at byte 11: the hour is 24; it must be 00 to 23"},
		{"2026-02-13T14:60:00Z", "at byte 14: the minute is 60; it must be 00 to 59"},
		{"2026-02-13T14:30:60Z", "at byte 17: the second is 60; it must be 00 to 59"},
		{"2026-13-01T00:00:00Z", "at byte 5: the month is 13; it must be 01 to 12"},
		{"2026-00-01T00:00:00Z", "at byte 5: the month is 00; it must be 01 to 12"},
		{"2026-02-29T00:00:00Z", "at byte 8: day 29 does not exist in 2026-02"},
		{"2026-04-31T00:00:00Z", "at byte 8: day 31 does not exist in 2026-04"},
		{"+2026-02-13T14:30:00Z", "at byte 0: want 4 digits for the year"},
		{"12026-02-13T14:30:00Z", "at byte 4: want '-' after the year"},
		{"２026-02-13T14:30:00Z", "at byte 0: want 4 digits for the year"},
		{"", "at byte 0: want 4 digits for the year"},
	}
	for _, r := range refuses {
		got, err := parseRFC3339(r.in)
		if err == nil {
			t.Errorf("parseRFC3339(%q) = %v, want an error", r.in, got)
			continue
		}
		if err.Error() != r.want {
			t.Errorf("parseRFC3339(%q): %v, want %s", r.in, err, r.want)
		}
	}
}

// TestDecodeRequestTimeFarAway: a time outside the skew is refused however
// far away it is. A difference past time.Duration's range (about 292
// years) once saturated and passed the check, so a request dated
// 9999-12-31 was fresh forever (issue 21).
func TestDecodeRequestTimeFarAway(t *testing.T) {
	maxDur := time.Duration(1<<63 - 1)
	tests := []struct {
		name string
		now  time.Time
		skew time.Duration
		time string
		want string // "" accepts
	}{
		{"year 9999", fixedNow, time.Minute, "9999-12-31T23:59:59Z", "is more than 292 years ahead"},
		{"year 0000", fixedNow, time.Minute, "0000-01-01T00:00:00Z", "is more than 292 years older"},
		{"three centuries ahead", fixedNow, time.Minute, "2326-02-13T14:30:00Z", "is more than 292 years ahead"},
		{"three centuries behind", fixedNow, time.Minute, "1726-02-13T14:30:00Z", "is more than 292 years older"},
		{"just inside the Duration range ahead", fixedNow, time.Minute, fixedNow.Add(maxDur).Truncate(time.Second).Format(time.RFC3339), "is 2562047h47m16s ahead"},
		{"just past the Duration range ahead", fixedNow, time.Minute, fixedNow.Add(maxDur).Add(time.Second).Truncate(time.Second).Format(time.RFC3339), "is more than 292 years ahead"},
		{"just past the Duration range behind", fixedNow, time.Minute, fixedNow.Add(-maxDur).Add(-time.Second).Truncate(time.Second).Format(time.RFC3339), "is more than 292 years older"},
		{"the largest skew, a far time", fixedNow, maxDur, "9999-12-31T23:59:59Z", "is more than 292 years ahead"},
		{"the largest skew, the edge", fixedNow, maxDur, fixedNow.Add(maxDur).Truncate(time.Second).Format(time.RFC3339), ""},
		{"the largest skew, behind", fixedNow, maxDur, fixedNow.Add(-maxDur).Add(time.Second).Truncate(time.Second).Format(time.RFC3339), ""},
		{"one ns past the skew", fixedNow, time.Minute, "2026-02-13T14:31:00.000000001Z", "is 1m0s ahead"},
		{"at the skew ahead", fixedNow, time.Minute, "2026-02-13T14:31:00Z", ""},
		{"at the skew behind", fixedNow, time.Minute, "2026-02-13T14:29:00Z", ""},
		{"one ns before the skew behind", fixedNow, time.Minute, "2026-02-13T14:28:59.999999999Z", "is 1m0s older"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := `{"id":"x","time":"` + tt.time + `","pipeline":[["a"]]}`
			_, err := DecodeRequest([]byte(line), DecodeOptions{Now: func() time.Time { return tt.now }, MaxClockSkew: tt.skew})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("accepted %s, want a refusal containing %q", tt.time, tt.want)
			case tt.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `field "time": `+tt.time+" "+tt.want)):
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
