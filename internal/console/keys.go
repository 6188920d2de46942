package console

import "fmt"

// Key is one key, or a set of keys that do the same, on one of the
// console's screens.
type Key struct {
	// Keys is how the help writes the keys: "a", "up/down", "q, ctrl+c".
	Keys string
	// Names are the keys as Bubble Tea names them (tea.KeyMsg.String),
	// for the test that binds this list to the screens' classify.
	Names []string
	// Does says what they do.
	Does string
}

// AnyKey in Key.Names stands for every key the group does not name.
const AnyKey = "*"

// KeyGroup is the keys of one screen.
type KeyGroup struct {
	// Screen says which screen, and the key that opens it.
	Screen string
	Keys   []Key
}

// Keys returns every key the console takes, screen by screen: the help of
// "agent-sudo approve" prints this list, and TestKeysListEveryKey checks
// it against what each screen's classify acts on, so that neither can
// leave a key out. docs/approving.md describes the same keys at length.
func Keys() []KeyGroup {
	back := func(keys string, names ...string) Key {
		return Key{Keys: keys, Names: names, Does: "back to the request"}
	}
	scroll := Key{Keys: "PgUp/PgDn, Home/End", Names: []string{"pgup", "pgdown", "home", "end"}, Does: "scroll what does not fit"}
	quit := Key{Keys: "q, ctrl+c", Names: []string{"q", "ctrl+c"}, Does: "quit; a request nobody decides times out"}
	return []KeyGroup{
		{"at a request", []Key{
			{"a", []string{"a"}, "allow once"},
			{"s", []string{"s"}, "allow for this session (same request, session and user), confirmed with y"},
			{"d", []string{"d"}, "deny, with an optional note for the agent: enter denies with it, esc without"},
			{"up/down, k/j", []string{"up", "down", "k", "j"}, "move between the choices"},
			{"enter", []string{"enter"}, "choose the highlighted choice (Deny is preselected)"},
			{string(detailsKey), []string{string(detailsKey)}, "all the request's details (environment values, host, id, times), or back"},
			{string(stdinKey), []string{string(stdinKey)}, "the stdin the request sends, in full, when it sends one"},
			scroll,
			{"g", []string{"g"}, "the session grants"},
			{string(runningKey), []string{string(runningKey)}, "the commands running now"},
			quit,
		}},
		{"while typing the note (after d)", []Key{
			{"enter", []string{"enter"}, "deny with this note"},
			{"esc", []string{"esc"}, "deny without a note"},
			{"ctrl+c", []string{"ctrl+c"}, "quit; a request nobody decides times out"},
		}},
		{"confirming a session grant (after s)", []Key{
			{string(confirmKey), []string{string(confirmKey)}, "grant it"},
			scroll,
			{"any other key", []string{AnyKey}, "back to the request, Deny preselected"},
		}},
		{"in the session grants (g)", []Key{
			{"up/down, k/j", []string{"up", "down", "k", "j"}, "choose a grant"},
			{"r, x, delete, enter", []string{"r", "x", "delete", "enter"}, "revoke the highlighted grant"},
			scroll,
			back("esc, g", "esc", "g"),
			quit,
		}},
		{fmt.Sprintf("in the running commands (%c)", runningKey), []Key{
			{"up/down, k/j", []string{"up", "down", "k", "j"}, "choose a command"},
			{string(stopKey), []string{string(stopKey)}, fmt.Sprintf("stop the highlighted command, confirmed with %c", confirmKey)},
			{string(outputKey), []string{string(outputKey)}, "show the end of its output"},
			scroll,
			back(fmt.Sprintf("esc, %c", runningKey), "esc", string(runningKey)),
			quit,
		}},
		{fmt.Sprintf("in the stdin view (%c)", stdinKey), []Key{
			scroll,
			{"up/down, k/j", []string{"up", "down", "k", "j"}, "scroll by a line"},
			back(fmt.Sprintf("esc, %c", stdinKey), "esc", string(stdinKey)),
			quit,
		}},
	}
}
