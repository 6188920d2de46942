package config_test

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/rules"
)

// docAccounts are the users the worked examples in docs/config.md name.
type docAccounts struct{}

var docUIDs = map[string]uint32{"root": 0, "alice": 1000, "bob": 1001}

func (docAccounts) LookupUser(name string) (uint32, error) {
	if id, ok := docUIDs[name]; ok {
		return id, nil
	}
	return 0, errors.New("no such user in the docs' examples")
}

func (docAccounts) LookupGroup(name string) (uint32, error) {
	return 0, errors.New("the docs' examples name no group")
}

// docSection returns the text of docs/config.md from heading to the next
// heading of the same or a higher level.
func docSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), heading+"\n")
	if !ok {
		t.Fatalf("docs/config.md has no %q section", heading)
	}
	level := heading[:strings.IndexByte(heading, ' ')+1]
	for _, h := range []string{"\n" + level, "\n## "} {
		if i := strings.Index(after, h); i >= 0 {
			after = after[:i]
		}
	}
	return after
}

// tableRows returns the cells of each row of the first Markdown table in
// text whose header is header, with "\|" unescaped inside cells.
func tableRows(t *testing.T, text, header string) [][]string {
	t.Helper()
	_, after, ok := strings.Cut(text, header+"\n")
	if !ok {
		t.Fatalf("no table with header %q", header)
	}
	var rows [][]string
	for i, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		if i == 0 {
			continue // | --- | --- |
		}
		line = strings.ReplaceAll(strings.Trim(line, "|"), `\|`, "\x00")
		var cells []string
		for _, c := range strings.Split(line, "|") {
			cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")))
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("the table %q has no rows", header)
	}
	return rows
}

// code returns the text of the first `code span` in cell.
func code(t *testing.T, cell string) string {
	t.Helper()
	m := regexp.MustCompile("`([^`]*)`").FindStringSubmatch(cell)
	if m == nil {
		t.Fatalf("cell %q has no `code`", cell)
	}
	return m[1]
}

// docStage turns "NAME=v ... prog args" into env names and a stage whose
// bare program is taken to be in /usr/bin, as the docs say.
func docStage(words []string) (env []string, st rules.Stage) {
	for len(words) > 1 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
		env = append(env, words[0][:strings.IndexByte(words[0], '=')])
		words = words[1:]
	}
	prog := words[0]
	if !strings.Contains(prog, "/") {
		prog = "/usr/bin/" + prog
	}
	return env, rules.Stage{Program: prog, Args: words[1:]}
}

// TestDocsWorkedExamples runs every row of the worked examples in
// docs/config.md (issue 10: the doc and the test cannot drift): the pattern
// table, each as an allow rule, and the worked rule set with its decision
// table; and checks that the linter has nothing to say about the worked set.
func TestDocsWorkedExamples(t *testing.T) {
	dirs := config.Default().TrustedDirs()
	t.Run("patterns", func(t *testing.T) {
		rows := tableRows(t, docSection(t, "### Arguments an allow rule accepts"), "| match | argv | matches? |")
		for _, row := range rows {
			var m struct{ M []string }
			if _, err := toml.Decode("M = "+code(t, row[0]), &m); err != nil {
				t.Errorf("match cell %q: %v", row[0], err)
				continue
			}
			argv := code(t, row[1])
			var words []string
			for _, w := range strings.Fields(argv) {
				words = append(words, strings.Trim(w, "'"))
			}
			e, err := rules.New([]rules.Rule{{Name: "r", Action: rules.Allow, Match: m.M}}, dirs, nil)
			if err != nil {
				t.Errorf("match %s: %v", row[0], err)
				continue
			}
			want := rules.Ask
			switch verdict := strings.Trim(row[2], "*"); {
			case strings.HasPrefix(verdict, "yes"):
				want = rules.Allow
			case strings.HasPrefix(verdict, "no"):
			default:
				t.Errorf("row %q: matches? must start with yes or no", row)
				continue
			}
			_, st := docStage(words)
			if d := e.Decide(rules.Query{Stages: []rules.Stage{st}, Privileged: true}); d.Action != want {
				t.Errorf("docs: match %s, argv %s says %q; the engine says %s (%s)", row[0], argv, row[2], d.Action, d.Reason)
			}
		}
	})
	t.Run("worked rule set", func(t *testing.T) {
		sec := docSection(t, "### A worked rule set")
		_, after, ok := strings.Cut(sec, "```toml\n")
		block, _, ok2 := strings.Cut(after, "```")
		if !ok || !ok2 {
			t.Fatal("docs/config.md: no toml block in the worked rule set")
		}
		c, err := config.Parse([]byte(block))
		if err != nil {
			t.Fatalf("the worked rule set in docs/config.md does not load: %v", err)
		}
		if ws := c.Lint(); len(ws) != 0 {
			t.Errorf("the linter warns about the worked rule set in docs/config.md: %q", ws)
		}
		e, err := rules.New(c.Rules, c.TrustedDirs(), docAccounts{})
		if err != nil {
			t.Fatal(err)
		}
		decision := regexp.MustCompile(`^(allow|deny|ask)(, by "([^"]+)")?`)
		rows := tableRows(t, sec, "| request | as | decision |")
		for _, row := range rows {
			req := code(t, row[0])
			q := rules.Query{Privileged: true, Peer: &rules.Peer{UID: 0, GIDs: []uint32{0}}}
			for _, stage := range strings.Split(req, "|") {
				env, st := docStage(strings.Fields(stage))
				q.Env = append(q.Env, env...)
				q.Stages = append(q.Stages, st)
			}
			for _, as := range strings.Split(row[1], ",") {
				k, v, _ := strings.Cut(strings.TrimSpace(as), " ")
				switch k {
				case "":
				case "privileged":
				case "unprivileged":
					q.Privileged = false
				case "forward_agent":
					q.ForwardAgent = true
				case "session":
					q.Session = v
				case "user":
					id, ok := docUIDs[v]
					if !ok {
						t.Fatalf("row %q: unknown user %q", row, v)
					}
					q.Peer = &rules.Peer{UID: id, GIDs: []uint32{id}}
				default:
					t.Fatalf("row %q: the as column has %q, which the test does not know", row, as)
				}
			}
			m := decision.FindStringSubmatch(row[2])
			if m == nil {
				t.Errorf("row %q: the decision must start with allow, deny or ask", row)
				continue
			}
			d := e.Decide(q)
			if string(d.Action) != m[1] || d.Rule != m[3] {
				t.Errorf("docs: %s as %q says %q; the engine says %s by %q (%s)", req, row[1], row[2], d.Action, d.Rule, d.Reason)
			}
		}
		if len(rows) < 20 {
			t.Errorf("only %d rows in the worked rule set's table", len(rows))
		}
	})
}

// TestDocsNotifierExamples: every notifier example in docs/config.md's
// "Notifiers" section loads, so none teaches a placement of a placeholder
// that the loader refuses as unsafe (notify.Check).
func TestDocsNotifierExamples(t *testing.T) {
	sec := docSection(t, "### Notifiers")
	n := 0
	for rest := sec; ; n++ {
		_, after, ok := strings.Cut(rest, "```toml\n")
		if !ok {
			break
		}
		block, tail, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("docs/config.md: an unclosed toml block in Notifiers")
		}
		rest = tail
		c, err := config.Parse([]byte(block))
		if err != nil {
			t.Errorf("notifier example %d of docs/config.md does not load: %v\n%s", n+1, err, block)
		} else if len(c.Notify) == 0 {
			t.Errorf("notifier example %d of docs/config.md lists no notifier:\n%s", n+1, block)
		}
	}
	if n < 2 {
		t.Errorf("docs/config.md's Notifiers section has %d toml blocks, want the ntfy and the desktop examples", n)
	}
}
