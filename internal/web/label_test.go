package web

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestLabelNamesTheHost: the page (its title, its list of daemons, each
// request's heading) names a daemon by the host it runs on, and adds how
// the human named it (the approver socket's path) only when two daemons
// served share a host or the daemon sent no host name.
func TestLabelNamesTheHost(t *testing.T) {
	st := func(name, host string) feedState {
		return feedState{name: name, hello: approval.Message{Type: approval.MsgHello, DaemonHost: host}}
	}
	for _, c := range []struct {
		what   string
		states []feedState
		want   []string
	}{
		{"one daemon", []feedState{st("/run/agent-sudo/approver.sock", "build-1")}, []string{"build-1"}},
		{"two hosts", []feedState{st("/run/agent-sudo/approver.sock", "build-1"), st("ssh root@build-2", "build-2")},
			[]string{"build-1", "build-2"}},
		{"two daemons on one host", []feedState{st("/run/a/approver.sock", "build-1"), st("/run/b/approver.sock", "build-1")},
			[]string{"build-1 (/run/a/approver.sock)", "build-1 (/run/b/approver.sock)"}},
		{"no host name sent", []feedState{st("ssh root@old", "")}, []string{"ssh root@old"}},
		{"a host name to escape", []feedState{st("x", "evil\x1b[2J")}, []string{`evil\x1b[2J`}},
	} {
		for i, want := range c.want {
			if got := label(c.states, i); got != want {
				t.Errorf("%s: daemon %d is labelled %q, want %q", c.what, i, got, want)
			}
		}
	}
}
