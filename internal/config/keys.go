package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/rules"
)

// ruleTables decodes data's rule tables again generically, each as the keys
// written in it, in file order: the key paths of toml.MetaData do not say
// which rule a key is in. It returns nil when data has none.
func ruleTables(data []byte) []map[string]any {
	var generic struct {
		Rule []map[string]any `toml:"rule"`
	}
	if _, err := toml.Decode(string(data), &generic); err != nil {
		return nil
	}
	return generic.Rule
}

// notifyShape refuses a notify written as one flat list of strings, such
// as notify = ["/usr/bin/notify-send", "command: {command}"], with a message that
// shows the shape wanted: the decoder's own error would only say the types
// differ. Any other problem is left to the decoder.
func notifyShape(data []byte) error {
	var generic struct {
		Notify any `toml:"notify"`
	}
	if _, err := toml.Decode(string(data), &generic); err != nil {
		return nil
	}
	list, ok := generic.Notify.([]any)
	if !ok {
		return nil
	}
	for i, v := range list {
		if _, ok := v.(string); ok {
			return hint.Wrap(fmt.Errorf("notify: element %d is a string; notify is a list of notifiers, each a list of strings", i),
				`one notifier is written notify = [["/usr/bin/notify-send", "agent-sudo: {session} asks", "command: {command}"]] (two pairs of brackets)`)
		}
	}
	return nil
}

// miscasedKeys refuses a key written in another case than the
// configuration's: the decoder matches keys to fields regardless of case,
// so "SOCKET" would set socket and a [[Rule]] table would replace the
// [[rule]] ones. A careful reader takes the file to mean exactly what it
// says; keys are case-sensitive in TOML.
func miscasedKeys(md toml.MetaData, tables []map[string]any) error {
	var msgs []string
	top, inRule := topKeys(), ruleKeys()
	for _, k := range md.Keys() {
		if len(k) == 1 {
			if want := otherCase(k[0], top); want != "" {
				msgs = append(msgs, fmt.Sprintf("key %q must be written %q: keys are case-sensitive", k[0], want))
			}
		}
	}
	for i, t := range tables {
		for _, key := range slices.Sorted(maps.Keys(t)) {
			if want := otherCase(key, inRule); want != "" {
				msgs = append(msgs, fmt.Sprintf("key %q in %s must be written %q: keys are case-sensitive", key, ruleLabel(i, t["name"]), want))
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// otherCase returns the key of known that key equals but for case, or ""
// when key is spelt exactly as a known key or matches none.
func otherCase(key string, known []string) string {
	if slices.Contains(known, key) {
		return ""
	}
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	return ""
}

// emptyRuleRestrictions refuses a rule's user, group or session written as
// "": the field would be read as absent, so the rule would apply to every
// user, group or session, the opposite of what writing the key suggests.
func emptyRuleRestrictions(tables []map[string]any) error {
	var errs []error
	for i, t := range tables {
		for _, key := range []string{"user", "group", "session"} {
			if v, ok := t[key]; ok && v == "" {
				errs = append(errs, fmt.Errorf("%s: %s is empty, which would restrict nothing; leave %s out to apply the rule to every %s, or name one", ruleLabel(i, t["name"]), key, key, key))
			}
		}
	}
	return errors.Join(errs...)
}

// topKeys and ruleKeys are the known keys, for suggestions: the toml tags
// of Config and of rules.Rule.
func topKeys() []string { return tagKeys(reflect.TypeFor[Config]()) }

func ruleKeys() []string { return tagKeys(reflect.TypeFor[rules.Rule]()) }

// tagKeys returns the toml tags of the fields of struct type t, in field
// order, leaving out fields tagged "-".
func tagKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if k, _, _ := strings.Cut(f.Tag.Get("toml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// unknownKeys reports every key of the file that the configuration does not
// have. Keys inside [[rule]] tables are reported with the rule they are in.
func unknownKeys(md toml.MetaData, tables []map[string]any) error {
	undecoded := md.Undecoded()
	if len(undecoded) == 0 {
		return nil
	}
	reported := map[string]bool{}
	var msgs []string
	for _, k := range undecoded {
		// Report a table, not also each key inside it.
		if len(k) > 1 && reported[toml.Key(k[:len(k)-1]).String()] {
			reported[k.String()] = true
			continue
		}
		reported[k.String()] = true
		if k[0] == "rule" && len(k) >= 2 {
			msgs = append(msgs, unknownRuleKey(tables, k[1:]))
			continue
		}
		msg := fmt.Sprintf("unknown key %q", k.String())
		if s := NearestKey(k.String(), topKeys()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		msgs = append(msgs, msg)
	}
	return errors.New(strings.Join(msgs, "; "))
}

// unknownRuleKey describes an unknown key inside [[rule]] tables, naming
// the rules that have it ([ruleTables]).
func unknownRuleKey(tables []map[string]any, key toml.Key) string {
	var where []string
	for i, r := range tables {
		if _, ok := r[key[0]]; ok {
			where = append(where, ruleLabel(i, r["name"]))
		}
	}
	msg := fmt.Sprintf("unknown key %q in [[rule]]", key.String())
	if len(where) > 0 {
		msg = fmt.Sprintf("unknown key %q in %s", key.String(), strings.Join(where, ", "))
	}
	if s := NearestKey(key.String(), ruleKeys()); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func ruleLabel(i int, name any) string {
	if s, ok := name.(string); ok && s != "" {
		return fmt.Sprintf("rule %d (%q)", i+1, s)
	}
	return "rule " + strconv.Itoa(i+1)
}

// NearestKey returns the known key closest to key, if it is close enough
// to be a plausible typo (one or two edits); "" otherwise. The web
// approver's settings file names its unknown keys with it too.
func NearestKey(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
