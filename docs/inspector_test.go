package docs

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// TestInspectorCommandsPinned: every MCP Inspector command docs/agents.md
// gives names the version test/mcp-inspector pins, which make
// mcp-inspector runs: without a version, npx may run an older Inspector
// from its cache, which fails on Node 20.
func TestInspectorCommandsPinned(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	data, err := os.ReadFile("../test/mcp-inspector/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	want := pkg.Dependencies["@modelcontextprotocol/inspector"]
	if want == "" {
		t.Fatal("test/mcp-inspector/package.json pins no @modelcontextprotocol/inspector")
	}
	doc, err := os.ReadFile("agents.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := regexp.MustCompile(`npx[^\n]*@modelcontextprotocol/inspector(@[^\s]*)?`).FindAllSubmatch(doc, -1)
	if len(cmds) == 0 {
		t.Fatal("docs/agents.md gives no npx command for the MCP Inspector")
	}
	for _, c := range cmds {
		if string(c[1]) != "@"+want {
			t.Errorf("docs/agents.md: %q does not name the pinned version %s", c[0], want)
		}
	}
}
