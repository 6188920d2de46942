package config

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRangeEdges: for every duration and count key, both ends of its range
// are accepted, and one step beyond either end is refused with a message
// that names the key, the value and the range.
func TestRangeEdges(t *testing.T) {
	for _, r := range Ranges() {
		t.Run(r.Key, func(t *testing.T) {
			type value struct {
				toml  string // the value as written in the file
				shown string // the value as the message shows it
			}
			var ok, bad []value
			if r.IsDuration() {
				// Written as nanoseconds so that the value is exact.
				d := func(v time.Duration) value {
					return value{fmt.Sprintf("%q", strconv.FormatInt(int64(v), 10)+"ns"), FormatDuration(v)}
				}
				ok = []value{d(r.Min), d(r.Max)}
				bad = []value{d(r.Min - 1), d(r.Max + 1), d(0), d(-time.Second)}
			} else {
				n := func(v int) value { return value{strconv.Itoa(v), strconv.Itoa(v)} }
				ok = []value{n(r.MinCount), n(r.MaxCount)}
				bad = []value{n(r.MinCount - 1), n(r.MaxCount + 1), n(99999999999)}
			}
			for _, v := range ok {
				c, err := Parse([]byte(r.Key + " = " + v.toml + "\n"))
				if err != nil {
					t.Errorf("%s = %s refused: %v", r.Key, v.toml, err)
				} else if err := c.Validate(); err != nil {
					t.Errorf("%s = %s: Validate: %v", r.Key, v.toml, err)
				}
			}
			for _, v := range bad {
				_, err := Parse([]byte(r.Key + " = " + v.toml + "\n"))
				var want string
				if r.IsDuration() {
					want = fmt.Sprintf("%s: %q is out of range: it must be from %s", r.Key, v.shown, r)
				} else {
					want = fmt.Sprintf("%s: %s is out of range: it must be from %s", r.Key, v.shown, r)
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s = %s: got error %v, want one containing %q", r.Key, v.toml, err, want)
				}
			}
		})
	}
}

// TestEveryDurationAndCountHasRange: every duration and integer field of
// Config has a range in Ranges, and the defaults are inside them.
func TestEveryDurationAndCountHasRange(t *testing.T) {
	has := map[string]bool{}
	def := Default()
	for _, r := range Ranges() {
		if has[r.Key] {
			t.Errorf("%s has two ranges", r.Key)
		}
		has[r.Key] = true
		if msg := r.check(def); msg != "" {
			t.Errorf("the default of %s is out of its range: %s", r.Key, msg)
		}
	}
	for f := range reflect.TypeFor[Config]().Fields() {
		if f.Type != reflect.TypeFor[Duration]() && f.Type.Kind() != reflect.Int {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if !has[key] {
			t.Errorf("%s (%s) has no range in Ranges()", key, f.Name)
		}
	}
}

// TestDocsRanges binds docs/config.md to the code: the range column of the
// table of keys says, for every key with a range, exactly Range.String, and
// is empty for every other key.
func TestDocsRanges(t *testing.T) {
	data, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, r := range Ranges() {
		want[r.Key] = r.String()
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|.*\\| ([^|]*) \\|$")
	rows := row.FindAllStringSubmatch(string(data), -1)
	seen := 0
	for _, m := range rows {
		if _, known := want[m[1]]; !known && strings.TrimSpace(m[2]) == "" {
			continue
		}
		seen++
		if got := strings.TrimSpace(m[2]); got != want[m[1]] {
			t.Errorf("docs/config.md: the range of %s is %q, want %q", m[1], got, want[m[1]])
		}
	}
	if seen != len(want) {
		t.Errorf("docs/config.md gives %d ranges in its table of keys, want %d (%d rows read)", seen, len(want), len(rows))
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", 90 * time.Minute: "1h30m", 10 * time.Minute: "10m",
		90 * time.Second: "1m30s", 500 * time.Millisecond: "500ms", 0: "0s", -time.Minute: "-1m",
		time.Hour + time.Second: "1h0m1s", 2562047 * time.Hour: "2562047h",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
