package web

import (
	"bytes"
	"html"
	"html/template"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/sheettest"
)

var tag = regexp.MustCompile(`<[^>]*>`)

// pageText is the text a browser shows of markup: tags dropped, entities
// read.
func pageText(markup string) string { return html.UnescapeString(tag.ReplaceAllString(markup, "")) }

// renderPage renders the page's fragment (page.html) with one request, c,
// as the web approver does for a signed-in browser.
func renderPage(t *testing.T, c sheettest.Case) (requestView, string) {
	t.Helper()
	tmpl, err := template.ParseFS(files, "templates/*.html")
	if err != nil {
		t.Fatal(err)
	}
	s := c.Shown
	rv := describe(approval.Message{Type: approval.MsgPending, ID: s.ID, Hash: s.Hash(), Request: s}, sheettest.T0, c.Context.DaemonHost)
	if s.Approvals > 1 {
		rv.approvedBy(s.Approvals, approval.Message{Type: approval.MsgApproved, Hash: rv.Hash, ApprovedBy: c.Context.ApprovedBy}, "")
	}
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, "page.html", view{Approver: "alice", Requests: []requestView{rv}}); err != nil {
		t.Fatal(err)
	}
	return rv, b.String()
}

// pagePart is a part as the page shows it.
func pagePart(p approval.Part) string { return partOf(p).Text }

// TestSheetPage: the page, for each request of the sheet's table, shows
// the sheet (sheettest.Cases, which the console, audit show, the
// notifiers and the MCP progress text are checked against too): what a
// phone shows first (Lead: what runs, as whom, why, the reason), the rest
// of the first screen, and every detail under the details' disclosure,
// each in the sheet's order, each argument in a box of its own, and every
// fact the request calls for.
func TestSheetPage(t *testing.T) {
	for _, c := range sheettest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			rv, markup := renderPage(t, c)
			sh := approval.NewSheet(c.Shown, c.Context)
			lead, rest := sh.Lead()
			i, j := strings.Index(markup, `<dl class="sheet first">`), strings.Index(markup, `<details class="more">`)
			if i < 0 || j < i {
				t.Fatalf("no first screen then details in the page:\n%s", markup)
			}
			sheettest.Shows(t, "the page's lead", pageText(markup[:i]), lead, pagePart)
			sheettest.Shows(t, "the page's first screen", pageText(markup[i:j]), rest, pagePart)
			sheettest.Shows(t, "the page's details", pageText(markup[j:]), sh.Details, pagePart)
			sheettest.Contains(t, "the page", pageText(markup), c.Facts)
			if sh.Approvals != nil && !strings.Contains(pageText(markup), sheettest.Text(*sh.Approvals, pagePart)) {
				t.Errorf("the page lacks the two-person line %q:\n%s", sheettest.Text(*sh.Approvals, pagePart), markup)
			}
			// Each argument of the command is a box of its own.
			args := 0
			for _, st := range c.Shown.Pipeline {
				args += len(st)
			}
			if got := strings.Count(markup[:strings.Index(markup, `</dd>`)], `<span class="arg">`); got != args {
				t.Errorf("the command shows %d argument boxes, want %d:\n%s", got, args, markup)
			}
			if len(rv.Lead) == 0 || rv.Lead[0].Key != approval.KeyCommand {
				t.Errorf("the page does not lead with the command: %+v", rv.Lead)
			}
		})
	}
}
