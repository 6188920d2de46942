package prototest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/proto"
)

// recorder is a testing.TB that keeps what it was told.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckFates: a complete table passes; a missing field, a field
// carried by a path the view lacks, a fate both carried and left, and a
// fate of a field proto.Request does not have each fail, saying which.
func TestCheckFates(t *testing.T) {
	type view struct {
		Req *struct{ Pipeline [][]string }
	}
	all := func() map[string]Fate {
		m := map[string]Fate{}
		for f := range reflect.TypeFor[proto.Request]().Fields() {
			m[f.Name] = Left("not in this view")
		}
		m["Pipeline"] = As("Req.Pipeline")
		return m
	}
	tests := []struct {
		name string
		edit func(map[string]Fate)
		want string
	}{
		{"complete", func(map[string]Fate) {}, ""},
		{"missing", func(m map[string]Fate) { delete(m, "Cwd") }, "proto.Request.Cwd has no fate"},
		{"no such path", func(m map[string]Fate) { m["Cwd"] = As("Req.Cwd") }, "has no field Cwd"},
		{"both", func(m map[string]Fate) { m["Cwd"] = Fate{As: "Req.Pipeline", Why: "x"} }, "either As or Left"},
		{"neither", func(m map[string]Fate) { m["Cwd"] = Fate{} }, "either As or Left"},
		{"gone", func(m map[string]Fate) { m["Umask"] = Left("x") }, "a fate for Umask"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := all()
			tt.edit(m)
			r := &recorder{TB: t}
			CheckFates(r, view{}, m)
			got := strings.Join(r.errs, "\n")
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("CheckFates: %q, want %q", got, tt.want)
			}
		})
	}
}
