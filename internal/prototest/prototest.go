// Package prototest is a test helper: it checks that a view of a request
// (a record, a message, a notifier's values, a JSON row) has decided, for
// every field of proto.Request, whether it carries the field or leaves it
// out and why. A field added to proto.Request then fails the test of every
// view until each says what it does with it.
package prototest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/proto"
)

// Fate is what a view does with one field of proto.Request: As names the
// view's field that carries it, a dot-separated path of Go field names
// (through pointers and embedded structs: "Peer.UID", "Request.RequestTime"); Why
// says why the view leaves it out. Exactly one is set.
type Fate struct {
	As, Why string
}

// As is the fate of a field the view carries, in its field at path.
func As(path string) Fate { return Fate{As: path} }

// Left is the fate of a field the view leaves out, for the reason why.
func Left(why string) Fate { return Fate{Why: why} }

// CheckFates fails t unless fates has one entry for each field of
// proto.Request and no other, each either carried by a field view's type
// has or left out with a reason. view is a value of the view's type.
func CheckFates(t testing.TB, view any, fates map[string]Fate) {
	t.Helper()
	vt := reflect.TypeOf(view)
	fields := map[string]bool{}
	for f := range reflect.TypeFor[proto.Request]().Fields() {
		fields[f.Name] = true
		fate, ok := fates[f.Name]
		switch {
		case !ok:
			t.Errorf("%s: proto.Request.%s has no fate: carry it (prototest.As) or say why it is left out (prototest.Left)", vt, f.Name)
		case (fate.As == "") == (fate.Why == ""):
			t.Errorf("%s: proto.Request.%s: a fate is either As or Left, not %+v", vt, f.Name, fate)
		case fate.As != "":
			if _, err := fieldAt(vt, fate.As); err != "" {
				t.Errorf("%s: proto.Request.%s is said to be carried as %s, but %s", vt, f.Name, fate.As, err)
			}
		}
	}
	for name := range fates {
		if !fields[name] {
			t.Errorf("%s: a fate for %s, which proto.Request has no longer", vt, name)
		}
	}
}

// fieldAt returns the type of the field at path in t, or why there is
// none.
func fieldAt(t reflect.Type, path string) (reflect.Type, string) {
	for name := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil, t.String() + " is not a struct"
		}
		f, ok := t.FieldByName(name)
		if !ok {
			return nil, t.String() + " has no field " + name
		}
		t = f.Type
	}
	return t, ""
}
