package daemon

import (
	"reflect"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/proto"
)

// TestGrantCoversOnlyTheSameRequest: a session grant made for one request
// covers a request that differs from it in one field of proto.Request only
// when that field does not change what runs, or for whom; every field of
// proto.Request is listed, so that a field added to the request is either
// bound by matchGrant or said here not to need it. Each field is changed
// by reflection, as a new one would be.
func TestGrantCoversOnlyTheSameRequest(t *testing.T) {
	covers := map[string]string{ // the fields a grant ignores, and why
		"ID":             "each request has its own",
		"Time":           "each request has its own",
		"Reason":         "the agent's words about the command, not the command",
		"Host":           "the agent's claim; the session and the kernel's uid bind the grant",
		"Action":         "only execute requests are asked about",
		"Progress":       "how the answer travels, not what runs",
		"NonInteractive": "whether the daemon would wait, not what runs",
	}
	binds := []string{"Session", "Pipeline", "Env", "Privileged", "ForwardAgent", "Cwd", "Stdin"}
	base := func() *proto.Request {
		return &proto.Request{ID: "g0", Action: proto.ActionExecute, Host: "h", Session: "s1",
			Time: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC), Pipeline: [][]string{{"apt", "install", "nginx"}},
			Env: map[string]string{"LANG": "C"}, Reason: "r", Privileged: true, ForwardAgent: false, Cwd: "/srv",
			Stdin: []byte("in"), Progress: false, NonInteractive: false}
	}
	b := newBroker(time.Hour, nil)
	p := pending("g0")
	p.Request = base()
	b.addGrant(p.Shown(), "console")
	if b.matchGrant(p.Shown(), p.Peer.UID) == nil {
		t.Fatal("the grant does not cover the request it was made for")
	}
	for f := range reflect.TypeFor[proto.Request]().Fields() {
		_, ignored := covers[f.Name]
		bound := false
		for _, n := range binds {
			bound = bound || n == f.Name
		}
		if ignored == bound {
			t.Errorf("proto.Request.%s: say whether a session grant binds it (binds) or why it need not (covers)", f.Name)
			continue
		}
		r := base()
		v := reflect.ValueOf(r).Elem().FieldByIndex(f.Index)
		switch x := v.Interface().(type) {
		case string:
			v.SetString(x + "x")
		case bool:
			v.SetBool(!x)
		case time.Time:
			v.Set(reflect.ValueOf(x.Add(time.Second)))
		case [][]string:
			v.Set(reflect.ValueOf(append(x, []string{"tee", "/tmp/x"})))
		case map[string]string:
			v.Set(reflect.ValueOf(map[string]string{"LANG": "C", "X": "1"}))
		case []byte:
			v.SetBytes(append(x, 'x'))
		default:
			t.Errorf("proto.Request.%s: a %s, which this test cannot change yet", f.Name, f.Type)
			continue
		}
		q := pending("g1")
		q.Request = r
		if got := b.matchGrant(q.Shown(), q.Peer.UID) != nil; got != ignored {
			t.Errorf("proto.Request.%s changed: the grant covers it = %v, want %v", f.Name, got, ignored)
		}
	}
}
