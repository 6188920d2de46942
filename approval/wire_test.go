package approval

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/proto"
)

// pending is a request to apt install nginx, or to run argv, as the
// daemon puts it to consoles.
func pending(id string, argv ...string) *Pending {
	if len(argv) == 0 {
		argv = []string{"apt", "install", "nginx"}
	}
	return &Pending{
		Request: &proto.Request{ID: id, Session: "s1", Pipeline: [][]string{argv}, Privileged: true,
			Env: map[string]string{"LANG": "C"}},
		Peer:     PeerInfo{UID: 1000, User: "agent", PID: 42, Exe: "/usr/bin/agent"},
		Programs: []Program{{Chain: []string{"/usr/bin/" + argv[0]}, SHA256: "00"}},
		RunAs:    "root",
	}
}

func TestShownHashCoversEveryField(t *testing.T) {
	base := pending("h1")
	h := base.Shown().Hash()
	if len(h) != 64 {
		t.Fatalf("hash %q", h)
	}
	if again := pending("h1").Shown().Hash(); again != h {
		t.Fatal("hash not deterministic")
	}
	changes := map[string]func(p *Pending){
		"reason":  func(p *Pending) { p.Request.Reason = "x" },
		"host":    func(p *Pending) { p.Request.Host = "x" },
		"env":     func(p *Pending) { p.Request.Env["LANG"] = "D" },
		"program": func(p *Pending) { p.Programs[0].Chain = []string{"/tmp/apt"} },
		"run as":  func(p *Pending) { p.RunAs = "nobody" },
		"pid":     func(p *Pending) { p.Peer.PID = 43 },
		"arg":     func(p *Pending) { p.Request.Pipeline[0][2] = "nginx " },
	}
	for name, change := range changes {
		p := pending("h1")
		change(p)
		if p.Shown().Hash() == h {
			t.Errorf("changing %s does not change the hash", name)
		}
	}
}

// TestShownHashSurvivesTheWire checks that a console, which hashes the
// Shown it decoded from the daemon's JSON, gets the daemon's hash even when
// the system gave the daemon strings that are not UTF-8.
func TestShownHashSurvivesTheWire(t *testing.T) {
	p := pending("w1")
	p.Peer.Exe = "/tmp/bad\xff\xfeexe"
	p.RunAs = "r\xc0ot"
	s := p.Shown()
	b, err := json.Marshal(Message{Type: MsgPending, Request: s})
	if err != nil {
		t.Fatal(err)
	}
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Request.Hash(), s.Hash(); got != want {
		t.Fatalf("hash after the wire %s, daemon's %s", got, want)
	}
}

// TestLastLines: the end of an output is its last MaxOutputLines lines,
// and of those at most the last MaxOutputBytes bytes.
func TestLastLines(t *testing.T) {
	var many strings.Builder
	for i := range 30 {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	wantMany := many.String()[strings.Index(many.String(), "line 10\n"):]
	long := strings.Repeat("y", MaxOutputBytes+100)
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"a", "a"},
		{"a\nb\n", "a\nb\n"},
		{many.String(), wantMany},
		{strings.TrimSuffix(many.String(), "\n"), strings.TrimSuffix(wantMany, "\n")},
		{"x\n" + long, long[100:]},
	} {
		if got := string(LastLines([]byte(tt.in))); got != tt.want {
			t.Errorf("LastLines(%d bytes) = %q…, want %q…", len(tt.in), got[:min(len(got), 20)], tt.want[:min(len(tt.want), 20)])
		}
	}
}
