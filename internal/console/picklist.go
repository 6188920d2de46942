package console

import (
	"fmt"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"

	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// pickList is the list the session grants and the running commands
// screens show: one wrapped label per item under a title, the cursor on
// one item, items told apart by key. Its zero value with title and key set
// is an empty list.
type pickList[T any] struct {
	title string
	key   func(T) string
	// form and sel draw the list; nil when it is empty.
	form *huh.Form
	sel  *huh.Select[string]
}

// build makes the list of items, each labelled by label and wrapped to m's
// width, with the cursor on the item whose key is keep when items has it
// (on the first item otherwise).
func (l *pickList[T]) build(m *model, items []T, label func(T) string, keep string) {
	if len(items) == 0 {
		l.form, l.sel = nil, nil
		return
	}
	opts := make([]huh.Option[string], len(items))
	for i, it := range items {
		opts[i] = huh.NewOption(strings.Join(termtext.Wrap(label(it), max(m.width-4, 1)), "\n"), l.key(it))
	}
	l.sel = huh.NewSelect[string]()
	l.sel.WithTheme(m.st.theme)
	l.sel.Title(l.title).Options(opts...)
	if keep != "" && slices.ContainsFunc(items, func(it T) bool { return l.key(it) == keep }) {
		l.sel.Value(&keep)
	}
	l.form = huh.NewForm(huh.NewGroup(l.sel)).
		WithTheme(m.st.theme).WithKeyMap(m.keymap).WithShowHelp(false).WithWidth(m.formWidth())
	l.form.Init()
}

// hovered returns the item of items under the cursor.
func (l *pickList[T]) hovered(items []T) (T, bool) {
	var zero T
	if l.sel == nil {
		return zero, false
	}
	key, ok := l.sel.Hovered()
	if !ok {
		return zero, false
	}
	i := slices.IndexFunc(items, func(it T) bool { return l.key(it) == key })
	if i < 0 {
		return zero, false
	}
	return items[i], true
}

// hoveredKey returns the key of the item of items under the cursor, or ""
// when there is none: what build keeps the cursor on.
func (l *pickList[T]) hoveredKey(items []T) string {
	if it, ok := l.hovered(items); ok {
		return l.key(it)
	}
	return ""
}

// setSize fits the list to m's width.
func (l *pickList[T]) setSize(m *model) {
	if l.form != nil {
		l.form.WithWidth(m.formWidth())
	}
}

// movesKey says whether k scrolls the screen or moves a list's cursor.
func movesKey(k tea.KeyMsg) bool {
	_, ok := scrollKey(k)
	return ok || isNavKey(k)
}

// update scrolls the screen for a scroll key, moves the cursor for a
// navigation key and gives the list any message that is not a key (huh's
// own). It returns false, having done nothing, for any other key.
func (l *pickList[T]) update(m *model, msg tea.Msg) (tea.Cmd, bool) {
	k, ok := msg.(tea.KeyMsg)
	if ok {
		if s, ok := scrollKey(k); ok {
			m.scrollBy(s)
			return nil, true
		}
		if !isNavKey(k) {
			return nil, false
		}
	}
	if l.form == nil {
		return nil, true
	}
	_, cmd := l.form.Update(msg)
	return cmd, true
}

// view renders the list and, when the daemon listed only some of the
// items, a line saying how many more there are (omitted, named by noun)
// and the most it lists.
func (l *pickList[T]) view(width, omitted int, noun string, most int) []string {
	out := strings.Split(l.form.View(), "\n")
	if omitted > 0 {
		out = append(out, wrapText(fmt.Sprintf("%d more %s not listed (the daemon lists at most %d)", omitted, termtext.Plural(omitted, noun), most), width)...)
	}
	return out
}
