package cli

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/audit"
)

var updateRows = flag.Bool("update-rows", false, "rewrite testdata/audit_rows.jsonl from what this version prints")

// TestAuditJSONRowsGolden checks that 'agent-sudo audit --json' prints the
// rows of internal/audit's golden log exactly as recorded in
// testdata/audit_rows.jsonl: the row is a documented format (docs/audit.md),
// and the summary it is printed from is built from the records' types, so
// that a change to either shows here.
func TestAuditJSONRowsGolden(t *testing.T) {
	const golden = "testdata/audit_rows.jsonl"
	j := audit.NewJoiner()
	var rows []*audit.Summary
	for e, err := range audit.Read(context.Background(), "../../../internal/audit/testdata/golden.jsonl") {
		if err != nil {
			t.Fatal(err)
		}
		if s, created, _ := j.Add(e); created {
			rows = append(rows, s)
		}
	}
	var b strings.Builder
	for _, s := range rows {
		b.WriteString(jsonRow(s))
	}
	if *updateRows {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("the rows differ from %s (go test -run TestAuditJSONRowsGolden -update-rows to accept a deliberate change):\ngot:\n%s\nwant:\n%s", golden, b.String(), want)
	}
}
