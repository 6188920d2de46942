package daemon

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/sheettest"
)

var updateNotify = flag.Bool("update-notify", false, "rewrite testdata/notify_values.json from what this version gives notifiers")

// TestNotifyValuesGolden checks that the notifiers' placeholders of each
// request of the sheet's table are as recorded in
// testdata/notify_values.json: the placeholders are a documented format
// (docs/config.md, notifiers), and the values are built from the
// request's Shown, so a change to either shows here.
func TestNotifyValuesGolden(t *testing.T) {
	const golden = "testdata/notify_values.json"
	got := map[string]map[string]string{}
	for _, c := range sheettest.Cases() {
		s := *c.Shown
		got[c.Name] = notifyValues(&s, "https://approver.example:8443/").Placeholders()
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *updateNotify {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(want) {
		t.Errorf("the placeholders differ from %s (go test -run TestNotifyValuesGolden -update-notify to accept a deliberate change):\ngot:\n%s", golden, b)
	}
}
