package audit

import (
	"reflect"
	"slices"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/internal/runner"
)

// jsonFields returns the JSON keys of struct type t, embedded structs'
// keys inline as encoding/json puts them.
func jsonFields(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			keys = append(keys, jsonFields(f.Type)...)
			continue
		}
		keys = append(keys, f.Name+" "+tag)
	}
	return keys
}

// TestPartsMirrorTheirSources checks that each record part that is
// converted field by field from the daemon's type (those a Go conversion
// does not check) has the same fields under the same JSON keys: a field
// added to the daemon's type must be added to the record's, or left out
// here with its reason, deliberately. The signed statement matters most:
// audit verify recomputes the challenge from the recorded statement, so a
// field it lost would make every signature fail to verify.
func TestPartsMirrorTheirSources(t *testing.T) {
	pairs := []struct {
		audit, source any
	}{
		{SignedBy{}, approval.SignedBy{}},
		{Approval{}, approval.Approval{}},
		{Person{}, approval.Person{}},
		{Ancestry{}, procinfo.Ancestry{}},
		{Hop{}, procinfo.Hop{}},
		{Container{}, procinfo.Container{}},
		{Writable{}, runner.Writable{}},
	}
	for _, p := range pairs {
		a, s := reflect.TypeOf(p.audit), reflect.TypeOf(p.source)
		if got, want := jsonFields(a), jsonFields(s); !slices.Equal(got, want) {
			t.Errorf("audit.%s has fields %q, but %s has %q", a.Name(), got, s, want)
		}
	}
	// The sheet and audit show order a container's namespaces by
	// approval's list; the daemon reads them by procinfo's.
	if !slices.Equal(approval.Namespaces, procinfo.Namespaces) {
		t.Errorf("approval.Namespaces %q, procinfo.Namespaces %q", approval.Namespaces, procinfo.Namespaces)
	}
}
