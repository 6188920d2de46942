package config

import (
	"reflect"
	"slices"
	"testing"
)

// TestKeepRestartKeys: for each key tagged `reload:"restart"`, a next
// configuration that differs only in that key is reported as changing
// exactly that key and gets the current value back; a change to a
// reloadable key is neither reported nor undone.
func TestKeepRestartKeys(t *testing.T) {
	fields := map[string]int{}
	forKeys(func(key string, _ bool, i int) { fields[key] = i })
	for _, key := range append(RestartKeys(), ReloadableKeys()...) {
		cur, next := Default(), Default()
		f := reflect.ValueOf(next).Elem().Field(fields[key])
		if !differ(f) {
			t.Fatalf("%s: the test cannot change a %s", key, f.Type())
		}
		changed := KeepRestartKeys(next, cur)
		restart := slices.Contains(RestartKeys(), key)
		switch {
		case restart && (!slices.Equal(changed, []string{key}) || !reflect.DeepEqual(next, cur)):
			t.Errorf("%s: changed %q, next kept the current value: %v", key, changed, reflect.DeepEqual(next, cur))
		case !restart && (len(changed) != 0 || reflect.DeepEqual(next, cur)):
			t.Errorf("reloadable %s: changed %q, and the new value was undone: %v", key, changed, reflect.DeepEqual(next, cur))
		}
	}
	if got, want := RestartKeys(), []string{"socket", "socket_group", "approver_socket", "passkeys", "audit_log",
		"audit_env_values", "audit_stdin", "exec", "cgroup", "sudo_path", "max_connections",
		"max_connections_per_user", "root_connections", "max_requests_per_minute"}; !slices.Equal(got, want) {
		t.Errorf("restart keys %q, want %q", got, want)
	}
}

// differ changes v to a value other than its current one, where it knows
// how.
func differ(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Struct:
		if v.NumField() == 0 || !differ(v.Field(0)) {
			return false
		}
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.New(v.Type().Elem()).Elem()))
	default:
		return false
	}
	return true
}
