package daemon

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/sheettest"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// TestSheetNotify: the notifiers' placeholders of each request of the
// sheet's table (sheettest.Cases, which the console, the page and audit
// show are checked against too) are the request's sheet's brief: {command}
// its command as a terminal shows it, {warnings} every warning the sheet
// names (and none it does not), each of the case's brief facts in one of
// them; and {reason} the reason.
func TestSheetNotify(t *testing.T) {
	for _, c := range sheettest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			s := *c.Shown
			v := notifyValues(&s, "").Placeholders()
			sh := approval.NewSheet(&s, approval.Context{})
			brief := sh.Brief()
			cmd, _ := approval.TermText(brief[0])
			if brief[0].Key != approval.KeyCommand || v["command"] != cmd {
				t.Errorf("{command} = %q, the sheet's command %q", v["command"], cmd)
			}
			if want := strings.Join(sh.Warnings(), "; "); v["warnings"] != termtext.Esc(want) {
				t.Errorf("{warnings} = %q, want %q", v["warnings"], want)
			}
			if want := termtext.Esc(s.Reason); v["reason"] != want {
				t.Errorf("{reason} = %q, want %q", v["reason"], want)
			}
			all := v["command"] + "\n" + v["run_as"] + "\n" + v["reason"] + "\n" + v["warnings"]
			for _, f := range c.Brief {
				if f == "as root" {
					f = "root" // {run_as}
				}
				if !strings.Contains(all, f) {
					t.Errorf("the notifier's values do not say %q: %q", f, all)
				}
			}
		})
	}
}
