package config

import (
	"reflect"
	"strings"
)

// A Config field tagged `reload:"restart"` is one a reload cannot change:
// what the daemon built from it at start (a socket, the audit log, the
// connection limits) stays for as long as it runs. Every other key is
// applied by a reload. docs/config.md, "Reloading", lists both.

// RestartKeys returns the keys that need a restart to change, in the order
// of the Config fields.
func RestartKeys() []string {
	var keys []string
	forKeys(func(key string, restart bool, _ int) {
		if restart {
			keys = append(keys, key)
		}
	})
	return keys
}

// ReloadableKeys returns the keys a reload applies, in the order of the
// Config fields.
func ReloadableKeys() []string {
	var keys []string
	forKeys(func(key string, restart bool, _ int) {
		if !restart {
			keys = append(keys, key)
		}
	})
	return keys
}

// KeepRestartKeys sets each restart key of next to its value in cur, and
// returns the keys whose values differed, in the order of RestartKeys.
func KeepRestartKeys(next, cur *Config) (changed []string) {
	n, c := reflect.ValueOf(next).Elem(), reflect.ValueOf(cur).Elem()
	forKeys(func(key string, restart bool, i int) {
		if !restart {
			return
		}
		if !reflect.DeepEqual(n.Field(i).Interface(), c.Field(i).Interface()) {
			changed = append(changed, key)
		}
		n.Field(i).Set(c.Field(i))
	})
	return changed
}

// forKeys calls f for each field of Config that is a configuration key
// (a toml tag other than "-"), with its key, whether it is tagged
// `reload:"restart"`, and its field index.
func forKeys(f func(key string, restart bool, field int)) {
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ",")
		if key == "" || key == "-" {
			continue
		}
		f(key, t.Field(i).Tag.Get("reload") == "restart", i)
	}
}
