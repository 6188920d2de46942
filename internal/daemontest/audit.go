package daemontest

import (
	"bytes"
	"encoding/json"
	"os"

	"github.com/agent-sudo/agent-sudo/internal/audit"
)

// AuditRecords returns the records of request id in d's audit log, in
// order (every record when id is ""); a line that does not decode fails
// the test.
func (d *Daemon) AuditRecords(id string) []audit.Record {
	d.t.Helper()
	b, err := os.ReadFile(d.AuditLog)
	if err != nil {
		d.t.Fatal(err)
	}
	var out []audit.Record
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			d.t.Fatalf("audit line %q: %v", line, err)
		}
		if id == "" || r.ID == id {
			out = append(out, r)
		}
	}
	return out
}
