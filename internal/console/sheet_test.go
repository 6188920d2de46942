package console

import (
	"io"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/sheettest"
)

// TestSheetConsole: the console's first screen and details, for each
// request of the sheet's table, show each item of the sheet's first screen
// and details, escaped for the terminal, in the sheet's order, and every
// fact the request calls for, on the first screen or in the details (sheettest.Cases, which the page, audit show,
// the notifiers and the MCP progress text are checked against too).
func TestSheetConsole(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	st := newStyles(r)
	x := escapers{func(bool) {}}
	for _, c := range sheettest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			sh := approval.NewSheet(c.Shown, c.Context)
			// Wide enough that nothing wraps or is cut.
			top := approvalsLine(&request{shown: c.Shown, approvedBy: c.Context.ApprovedBy})
			first, _ := firstScreen(st, c.Shown, 4000, 0)
			full, _ := details(st, c.Shown, 4000, true)
			for _, v := range []struct {
				name  string
				lines []string
				items []approval.Item
			}{{"the console's first screen", first, sh.First}, {"the console's details", full, sh.Details}} {
				text := top + "\n" + strings.Join(v.lines, "\n")
				sheettest.Shows(t, v.name, text, v.items, x.part)
			}
			// What the console shows, on its first screen or one key away.
			sheettest.Contains(t, "the console", top+"\n"+strings.Join(append(first, full...), "\n"), c.Facts)
		})
	}
}
