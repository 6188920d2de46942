package console

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestGrantExpiryCountedFromReceipt: the daemon ends a session grant on
// elapsed time and sends the time it has left (expires_in_ms) with each
// listing; the console shows the expiry counted from when it received the
// listing, on its own clock, not the daemon's wall-clock "expires", which a
// clock step since the grant was made (here: an hour back) leaves wrong.
func TestGrantExpiryCountedFromReceipt(t *testing.T) {
	h := newHarness(t, "")
	// The daemon's wall clock was stepped back an hour: its "expires" is an
	// hour off the console's clock, while 15 minutes are left.
	raw := `{"type":"grants","grants":[{"id":"g1","session":"s1","uid":1000,"pipeline":[["apt-get","update"]],"env_keys":[],"privileged":true,"cwd":"/","by":"console",` +
		`"created":"` + t0.Add(-time.Hour).Format(time.RFC3339) + `","expires":"` + t0.Add(-45*time.Minute).Format(time.RFC3339) + `","expires_in_ms":900000}]}`
	var msg approval.Message
	if err := json.Unmarshal([]byte(raw), &msg); err != nil {
		t.Fatal(err)
	}
	h.daemon(msg)
	h.press("g")
	h.wantView("g1  uid 1000  session s1  expires "+t0.Add(15*time.Minute).Format(time.DateTime),
		"expires    "+t0.Add(15*time.Minute).Format(time.DateTime)+" (in 15m0s)")
	h.advance(5 * time.Minute)
	h.press("down") // redraw
	h.wantView("(in 10m0s)")
}
