package web

import (
	"context"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// PicturesEnv names the directory TestPictures writes its images to (make
// pictures); without it the test is skipped.
const PicturesEnv = "AGENT_SUDO_PICTURES"

// TestPictures makes the images README.md and docs/approving.md show, from
// a real run, so that they stay true: the console (agent-sudo approve) at
// 80×24 in tmux, its screen captured with its colours and drawn in
// chromium (console.png), and the web approver's page in chromium at
// 390×844, a phone's size, with a request waiting (phone.png) and with the
// receipt of its deny (phone-receipt.png).
func TestPictures(t *testing.T) {
	dir := os.Getenv(PicturesEnv)
	if dir == "" {
		t.Skipf("%s is not set; make pictures makes the images", PicturesEnv)
	}
	r := setupFor(t, false)
	b := r.b
	_, cli := daemontest.Binaries(t)
	tm := tmuxtest.Start(t, tmuxtest.Config{Command: fmt.Sprintf("%s approve --approver-socket %s", cli, r.d.ApproverSocket), Cols: 80, Rows: 24})
	tm.WaitFor("waiting for requests")

	// As an agent on this host asks: its host is the daemon's.
	host, _ := os.Hostname()
	done := make(chan *proto.Response, 1)
	go func() {
		resp, err := client.New(r.d.Socket).Run(context.Background(), &proto.Request{ID: "pic-1", Session: "build-42", Host: host,
			Reason:   "The docs preview needs a web server on this host.\nnginx is in Debian's archive.",
			Pipeline: [][]string{{"apt-get", "install", "-y", "nginx"}}, Time: time.Now()})
		if err != nil {
			resp = &proto.Response{Status: "client-error", Message: err.Error()}
		}
		done <- resp
	}()
	tm.WaitFor("apt-get install -y nginx")
	tm.WaitGone("keys enabled in")
	screen := tm.Run("capture-pane", "-e", "-p", "-t", tm.Name)
	page := filepath.Join(t.TempDir(), "console.html")
	if err := os.WriteFile(page, []byte(terminalHTML(screen)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Do(map[string]any{"op": "new", "page": "terminal", "bare": true})
	b.Do(map[string]any{"op": "goto", "page": "terminal", "url": "file://" + page})
	b.Do(map[string]any{"op": "screenshot", "page": "terminal", "selector": "pre", "path": filepath.Join(dir, "console.png")})

	b.Do(map[string]any{"op": "viewport", "width": 390, "height": 844})
	b.Do(map[string]any{"op": "wait", "selector": sel("pic-1") + " button.allow[data-ready='1']"})
	b.Do(map[string]any{"op": "screenshot", "path": filepath.Join(dir, "phone.png")})
	b.Do(map[string]any{"op": "click", "selector": sel("pic-1") + " button.deny"})
	b.Do(map[string]any{"op": "waitText", "selector": receipt("pic-1") + " .outcome", "text": "Denied"})
	if resp := <-done; resp.Status != proto.StatusDenied {
		t.Fatalf("pic-1: %s", resp.Status)
	}
	b.Do(map[string]any{"op": "wait", "selector": sel("pic-1"), "state": "detached"})
	b.Do(map[string]any{"op": "screenshot", "path": filepath.Join(dir, "phone-receipt.png")})
}

// terminalHTML draws a terminal's screen, as tmux capture-pane -e gives
// it (text and SGR sequences), as an HTML page: one pre, each run of text
// in a span with its colours and attributes, escaped.
func terminalHTML(screen string) string {
	var out strings.Builder
	out.WriteString(`<!doctype html><html><head><meta charset="utf-8"><style>` +
		`body{margin:0;background:#1e1e1e}pre{display:inline-block;margin:0;padding:8px;background:#1e1e1e;color:#d4d4d4;` +
		`font:14px/1.25 "DejaVu Sans Mono",monospace}</style></head><body data-ready="1"><pre>`)
	var st sgr
	open := false
	flush := func() {
		if open {
			out.WriteString("</span>")
		}
		open = false
		if css := st.css(); css != "" {
			out.WriteString(`<span style="` + css + `">`)
			open = true
		}
	}
	for i := 0; i < len(screen); {
		if screen[i] == 0x1b && i+1 < len(screen) && screen[i+1] == '[' {
			j := i + 2
			for j < len(screen) && (screen[j] >= '0' && screen[j] <= '9' || screen[j] == ';' || screen[j] == ':') {
				j++
			}
			if j < len(screen) && screen[j] == 'm' {
				st.apply(screen[i+2 : j])
				flush()
			}
			i = j + 1
			continue
		}
		j := strings.IndexByte(screen[i:], 0x1b)
		if j < 0 {
			j = len(screen) - i
		}
		out.WriteString(html.EscapeString(screen[i : i+j]))
		i += j
	}
	if open {
		out.WriteString("</span>")
	}
	out.WriteString("</pre></body></html>\n")
	return out.String()
}

// sgr is the state of a terminal's Select Graphic Rendition.
type sgr struct {
	fg, bg                                string
	bold, dim, italic, underline, reverse bool
}

// palette is the 16 colours of the ANSI set (a dark theme's).
var palette = [16]string{"#1e1e1e", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
	"#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"}

// color256 is colour n of the 256-colour set.
func color256(n int) string {
	switch {
	case n < 16:
		return palette[n]
	case n < 232:
		n -= 16
		level := func(v int) int {
			if v == 0 {
				return 0
			}
			return 55 + 40*v
		}
		return fmt.Sprintf("#%02x%02x%02x", level(n/36), level(n/6%6), level(n%6))
	}
	g := 8 + 10*(n-232)
	return fmt.Sprintf("#%02x%02x%02x", g, g, g)
}

// apply applies the parameters of one SGR sequence ("1;38;5;203").
func (s *sgr) apply(params string) {
	var ps []int
	for _, f := range strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' }) {
		n, _ := strconv.Atoi(f)
		ps = append(ps, n)
	}
	if len(ps) == 0 {
		ps = []int{0}
	}
	for i := 0; i < len(ps); i++ {
		switch p := ps[i]; {
		case p == 0:
			*s = sgr{}
		case p == 1:
			s.bold = true
		case p == 2:
			s.dim = true
		case p == 3:
			s.italic = true
		case p == 4:
			s.underline = true
		case p == 7:
			s.reverse = true
		case p == 22:
			s.bold, s.dim = false, false
		case p == 23:
			s.italic = false
		case p == 24:
			s.underline = false
		case p == 27:
			s.reverse = false
		case p >= 30 && p <= 37:
			s.fg = palette[p-30]
		case p >= 90 && p <= 97:
			s.fg = palette[p-90+8]
		case p >= 40 && p <= 47:
			s.bg = palette[p-40]
		case p >= 100 && p <= 107:
			s.bg = palette[p-100+8]
		case p == 39:
			s.fg = ""
		case p == 49:
			s.bg = ""
		case p == 38 || p == 48:
			c := ""
			if i+2 < len(ps) && ps[i+1] == 5 {
				c, i = color256(ps[i+2]), i+2
			} else if i+4 < len(ps) && ps[i+1] == 2 {
				c, i = fmt.Sprintf("#%02x%02x%02x", ps[i+2], ps[i+3], ps[i+4]), i+4
			}
			if p == 38 {
				s.fg = c
			} else {
				s.bg = c
			}
		}
	}
}

// css is the state as a span's style; "" for the default.
func (s sgr) css() string {
	fg, bg := s.fg, s.bg
	if s.reverse {
		if fg == "" {
			fg = "#d4d4d4"
		}
		if bg == "" {
			bg = "#1e1e1e"
		}
		fg, bg = bg, fg
	}
	var css []string
	if fg != "" {
		css = append(css, "color:"+fg)
	}
	if bg != "" {
		css = append(css, "background:"+bg)
	}
	if s.bold {
		css = append(css, "font-weight:bold")
	}
	if s.dim {
		css = append(css, "opacity:0.7")
	}
	if s.italic {
		css = append(css, "font-style:italic")
	}
	if s.underline {
		css = append(css, "text-decoration:underline")
	}
	return strings.Join(css, ";")
}
