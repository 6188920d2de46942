package web

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/sheettest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// askReq sends req to the rig's first daemon as an agent does.
func (r *rig) askReq(req *proto.Request) <-chan *proto.Response {
	ch := make(chan *proto.Response, 1)
	go func() {
		resp, err := client.New(r.d.Socket).Run(context.Background(), req)
		if err != nil {
			resp = &proto.Response{Status: "client-error", Message: err.Error()}
		}
		ch <- resp
	}()
	return ch
}

// rect is an element's place on the page (driver.mjs's rects).
type rect struct {
	Top, Bottom, Left, Right, Height, LineHeight float64
	Text                                         string
	Visible                                      bool
}

// layout is what driver.mjs's rects answers.
type layout struct {
	VW, VH, ScrollY float64
	Rects           map[string][]rect
}

// rects measures, in the browser, every element matching each selector.
func (r *rig) rects(t *testing.T, sels ...string) layout {
	t.Helper()
	m := r.b.Do(map[string]any{"op": "rects", "selectors": sels})
	var l layout
	l.VW, _ = m["vw"].(float64)
	l.VH, _ = m["vh"].(float64)
	l.ScrollY, _ = m["scrollY"].(float64)
	l.Rects = map[string][]rect{}
	rs, _ := m["rects"].(map[string]any)
	for sel, v := range rs {
		list, _ := v.([]any)
		for _, e := range list {
			o, _ := e.(map[string]any)
			f := func(k string) float64 { x, _ := o[k].(float64); return x }
			text, _ := o["text"].(string)
			vis, _ := o["visible"].(bool)
			l.Rects[sel] = append(l.Rects[sel], rect{Top: f("top"), Bottom: f("bottom"), Left: f("left"), Right: f("right"),
				Height: f("height"), LineHeight: f("lineHeight"), Text: text, Visible: vis})
		}
	}
	return l
}

// phoneFirstScreen checks, in chromium at 390×844, that a phone's first
// screen of three requests (a 13-argument apt-get install with a five-line
// reason, a tee into /etc with a configuration file on stdin, a request
// that needs two people) shows, without scrolling and not under the
// buttons, what runs (each argument a box of its own, none wrapped inside),
// as whom, why a human is asked and the reason, and the Deny and Allow
// buttons; that stdin shows as lines with its size and hash; and that the
// details (who asked, env, id, times) are one tap away.
func phoneFirstScreen(t *testing.T, r *rig) {
	b := r.b
	b.Do(map[string]any{"op": "viewport", "width": 390, "height": 844})
	t.Cleanup(func() { b.Do(map[string]any{"op": "viewport", "width": 1280, "height": 720}) })
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	apt, tee := sheettest.AptGet("phone-apt"), sheettest.TeeConfig("phone-tee")
	two := sheettest.TwoPerson("phone-2p")
	for _, tt := range []struct {
		req   *proto.Request
		extra []string // selectors that must be on the first screen too
	}{
		{&proto.Request{ID: "phone-apt", Reason: apt.Reason, Pipeline: apt.Pipeline, Privileged: true}, nil},
		{&proto.Request{ID: "phone-tee", Reason: tee.Reason, Pipeline: tee.Pipeline, Privileged: true, Stdin: tee.Stdin.Data}, nil},
		// The rig's rule "two people" asks two people for echo two-person.
		{&proto.Request{ID: "phone-2p", Reason: two.Reason, Pipeline: [][]string{{"echo", "two-person", "phone"}}, Privileged: true},
			[]string{"p.approvals"}},
	} {
		t.Run(tt.req.ID, func(t *testing.T) {
			req := tt.req
			req.Session, req.Host, req.Time = "phone", host, time.Now()
			done := r.askReq(req)
			s := sel(req.ID)
			b.Do(map[string]any{"op": "wait", "selector": s + " button.allow[data-ready='1']"})
			facts := []string{"dl.lead dd.command", "dl.lead dd.runs", "dl.lead dd.why", "dl.lead dd.reason"}
			sels := []string{s + " .decide", s + " button.deny", s + " button.allow", s + " dl.lead dd.command span.arg",
				s + " dl.first dd.stdin", s + " dl.first dd.stdin-line", s + " details.more", s + " details.more dd.id", s + " details.more dd.asked-by"}
			for _, f := range append(facts, tt.extra...) {
				sels = append(sels, s+" "+f)
			}
			l := r.rects(t, sels...)
			if l.VW != 390 || l.VH != 844 || l.ScrollY != 0 {
				t.Fatalf("viewport %v×%v scrolled by %v, want 390×844 unscrolled", l.VW, l.VH, l.ScrollY)
			}
			bar := l.Rects[s+" .decide"]
			if len(bar) != 1 {
				t.Fatalf("%d decision bars", len(bar))
			}
			for _, btn := range []string{" button.deny", " button.allow"} {
				e := l.Rects[s+btn]
				if len(e) != 1 || e[0].Top < 0 || e[0].Bottom > l.VH || !e[0].Visible {
					t.Errorf("%s is not on the first screen: %+v (viewport height %v)", btn, e, l.VH)
				}
			}
			lowest := 0.0
			for _, f := range append(facts, tt.extra...) {
				es := l.Rects[s+" "+f]
				if len(es) == 0 {
					t.Errorf("no %s on the page", f)
				}
				for _, e := range es {
					lowest = max(lowest, e.Bottom)
					if e.Top < 0 || e.Bottom > bar[0].Top || !e.Visible {
						t.Errorf("%s %q is not on the first screen above the buttons (top %v, bottom %v; the buttons' top %v)",
							f, e.Text, e.Top, e.Bottom, bar[0].Top)
					}
				}
			}
			t.Logf("%s at 390×844: the facts end at %.0fpx, the buttons start at %.0fpx", req.ID, lowest, bar[0].Top)
			if n := len(l.Rects[s+" dl.lead dd.reason"]); n != strings.Count(req.Reason, "\n")+1 {
				t.Errorf("the reason shows as %d lines, want %d", n, strings.Count(req.Reason, "\n")+1)
			}
			// Each argument is a box of its own, none wrapped inside.
			args := l.Rects[s+" dl.lead dd.command span.arg"]
			if want := len(req.Pipeline[0]); len(args) != want {
				t.Errorf("the command shows %d argument boxes, want %d", len(args), want)
			}
			for i, a := range args {
				if a.Text != req.Pipeline[0][i] || a.LineHeight == 0 || a.Height > 1.5*a.LineHeight+4 {
					t.Errorf("argument %d shows as %q in a box %v high (line height %v), want %q on one line",
						i, a.Text, a.Height, a.LineHeight, req.Pipeline[0][i])
				}
			}
			if req.Stdin != nil {
				st := approval.NewStdinShown(req.Stdin)
				head := l.Rects[s+" dl.first dd.stdin"]
				if len(head) != 1 || !strings.Contains(head[0].Text, fmt.Sprintf("%d bytes · sha256 %s", st.Size, st.SHA256)) {
					t.Errorf("stdin's size and hash: %+v", head)
				}
				lines := strings.Split(strings.TrimSuffix(string(req.Stdin), "\n"), "\n")
				got := l.Rects[s+" dl.first dd.stdin-line"]
				if len(got) != len(lines) {
					t.Errorf("stdin shows as %d lines, want %d", len(got), len(lines))
				}
				for i := range min(len(got), len(lines)) {
					if got[i].Text != lines[i] {
						t.Errorf("stdin line %d shows as %q, want %q", i+1, got[i].Text, lines[i])
					}
				}
			}
			// The details, one tap away.
			if d := l.Rects[s+" details.more dd.id"]; len(d) != 1 || d[0].Visible {
				t.Errorf("the details are shown before a tap, or have no id: %+v", d)
			}
			b.Do(map[string]any{"op": "click", "selector": s + " details.more > summary"})
			l = r.rects(t, s+" details.more dd.id", s+" details.more dd.asked-by")
			if d := l.Rects[s+" details.more dd.id"]; len(d) != 1 || !d[0].Visible || d[0].Text != req.ID {
				t.Errorf("after a tap on the details, the id: %+v", d)
			}
			if d := l.Rects[s+" details.more dd.asked-by"]; len(d) != 1 || !d[0].Visible || !strings.Contains(d[0].Text, "pid") {
				t.Errorf("after a tap on the details, who asked: %+v", d)
			}
			b.Do(map[string]any{"op": "click", "selector": s + " button.deny"})
			b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Denied: " + req.ID})
			if resp := <-done; resp.Status != proto.StatusDenied {
				t.Fatalf("%s: %s, want denied", req.ID, resp.Status)
			}
			b.Do(map[string]any{"op": "wait", "selector": s, "state": "detached"})
		})
	}
}
