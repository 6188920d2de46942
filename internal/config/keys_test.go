package config

import (
	"os"
	"reflect"
	"sort"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestExampleUsesEveryKey keeps the packaged example complete: every key the
// loader knows must appear in it, so that it documents them all.
func TestExampleUsesEveryKey(t *testing.T) {
	data, err := os.ReadFile("../../packaging/config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range topKeys() {
		if _, ok := doc[k]; !ok {
			t.Errorf("packaging/config.example.toml does not set %q", k)
		}
	}
	seen := map[string]bool{}
	rs, _ := doc["rule"].([]map[string]any)
	for _, r := range rs {
		for k := range r {
			seen[k] = true
		}
	}
	for _, k := range ruleKeys() {
		if !seen[k] {
			t.Errorf("no [[rule]] in packaging/config.example.toml uses %q", k)
		}
	}
}

// TestKnownKeysMatchFile checks that the key lists used for suggestions are
// exactly the TOML keys of the file struct.
func TestKnownKeysMatchFile(t *testing.T) {
	tags := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			out = append(out, rt.Field(i).Tag.Get("toml"))
		}
		sort.Strings(out)
		return out
	}
	sorted := func(s []string) []string { s = append([]string(nil), s...); sort.Strings(s); return s }
	if got, want := sorted(topKeys()), tags(file{}); !reflect.DeepEqual(got, want) {
		t.Errorf("topKeys() = %q, want the tags of file: %q", got, want)
	}
	if got, want := sorted(ruleKeys()), tags(ruleRaw{}); !reflect.DeepEqual(got, want) {
		t.Errorf("ruleKeys() = %q, want the tags of ruleRaw: %q", got, want)
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"socket", "soket", 1},
		{"exec", "excec", 1}, {"kitten", "sitting", 3}, {"abc", "abc", 0},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
