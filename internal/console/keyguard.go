package console

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
)

// QuietWindow is how long the keyboard must be quiet before and after a key
// that acts (a decision, or any key that does more than move a cursor) for
// the key to count. docs/approving.md ("Keys") says why.
const QuietWindow = 150 * time.Millisecond

// readLogSize is how many terminal reads the read log keeps: enough to see
// the read before a lone key and any read after it.
const readLogSize = 16

// discardedText is the notice shown when input was discarded as a burst;
// tests look for it.
const discardedText = "input discarded: %d keys arrived together (paste or typing ahead); press a key on its own to decide"

// discardedReadText is the notice shown when the terminal reads, not the
// key events, show that a key did not arrive on its own.
const discardedReadText = "input discarded: the key arrived together with other input (paste or typing ahead); press a key on its own to decide"

// discardedPrefix starts every discard notice; from the second discard
// while the notice is shown, a count follows it: "input discarded (2×): ".
const discardedPrefix = "input discarded: "

// keyKind is what a key does in the console's current state.
type keyKind int

const (
	// kindNone: the key does nothing here.
	kindNone keyKind = iota
	// kindEarly: a request's prompt guard is running; the key is dropped
	// and the guard starts over.
	kindEarly
	// kindNav moves a cursor or scrolls; it acts at once and never decides.
	kindNav
	// kindCursor moves the cursor of the decision prompt: it acts at once
	// unless it is part of a burst.
	kindCursor
	// kindText edits the note; it acts at once.
	kindText
	// kindAction decides, revokes, quits or switches screens: it is held
	// for the quiet window and counts only when it arrived alone.
	kindAction
)

// heldKey is an acting key waiting for the quiet window after it.
type heldKey struct {
	k   tea.KeyMsg
	at  time.Time
	seq uint64
	// screen and req are the screen and the request the key was pressed
	// on; when either changes before the key takes effect, it is dropped.
	screen component
	req    *request
}

// quietMsg: the quiet window after the held key with the same seq ended.
type quietMsg struct{ seq uint64 }

// keyboard is the timing of the console's input.
type keyboard struct {
	// last is when the latest input arrived; zero before any.
	last time.Time
	// burst counts the keys of the current burst: keys that arrived less
	// than QuietWindow after the one before.
	burst int
	// bursts counts the bursts (a key that arrived alone is a burst of
	// one); it names the current one.
	bursts uint64
	held   *heldKey
	seq    uint64
}

// arrive records n keys arriving at now and reports whether they arrived
// within quiet of the input before them.
func (kb *keyboard) arrive(now time.Time, n int, quiet time.Duration) bool {
	together := !kb.last.IsZero() && now.Sub(kb.last) < quiet
	if together {
		kb.burst += n
	} else {
		kb.burst = n
		kb.bursts++
	}
	kb.last = now
	return together
}

// keyCount is how many keys k stands for: bubbletea puts the characters
// it read together, up to a space or control character, into one event.
func keyCount(k tea.KeyMsg) int {
	n := 1
	if k.Type == tea.KeyRunes {
		n = max(len(k.Runes), 1)
	}
	if k.Alt {
		n++ // Alt is an escape character in front
	}
	return n
}

// alone reports whether k is one key by itself: not a paste, not Alt with
// a key, not several characters in one event.
func alone(k tea.KeyMsg) bool {
	return !k.Paste && !k.Alt && keyCount(k) == 1
}

// keySize is how many bytes a terminal sends for k, or 0 when that is not
// known exactly.
func keySize(k tea.KeyMsg) int {
	switch k.Type {
	case tea.KeyRunes:
		if len(k.Runes) == 1 {
			return utf8.RuneLen(k.Runes[0])
		}
	case tea.KeyEnter, tea.KeyEsc, tea.KeySpace, tea.KeyTab, tea.KeyBackspace:
		return 1
	case tea.KeyDelete:
		return len("\x1b[3~")
	}
	return 0
}

// key handles one key event. Ctrl-C quits at once; every other key is
// timed first: a key that acts is held for the quiet window and takes
// effect only when nothing else arrived within the window before it and
// nothing arrives within the window after it (see release).
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyCtrlC {
		if c, ok := m.screen.(*confirmScreen); ok && c.stop {
			return m.exit() // Ctrl-C twice
		}
		return m.quit()
	}
	now := m.cfg.now()
	var cmds []tea.Cmd
	if h := m.kb.held; h != nil && !now.Before(h.at.Add(m.cfg.quiet)) {
		// The held key's quiet window ended before this key arrived; its
		// timer is merely late.
		cmds = append(cmds, m.release(now))
		if m.quitting {
			return tea.Batch(cmds...)
		}
	}
	together := m.kb.arrive(now, keyCount(k), m.cfg.quiet)
	discarded := m.kb.held != nil
	m.kb.held = nil
	switch m.screen.classify(k) {
	case kindEarly:
		// Dropped, and the guard starts over: only a key pressed after a
		// pause with the prompt on screen counts.
		m.addNotice(notice{kind: "guard", text: fmt.Sprintf(
			"ignored a key pressed within %s of the prompt appearing; wait for the prompt, then press again", guardText(m.cfg.guard))})
		cmds = append(cmds, m.armGuard())
	case kindNav, kindText:
		cmds = append(cmds, m.apply(k))
	case kindCursor:
		if together || !alone(k) {
			discarded = true
		} else {
			cmds = append(cmds, m.apply(k))
		}
	case kindAction:
		if together || !alone(k) {
			discarded = true
			break
		}
		m.kb.seq++
		m.kb.held = &heldKey{k: k, at: now, seq: m.kb.seq, screen: m.screen, req: m.current()}
		cmds = append(cmds, m.cfg.after(m.cfg.quiet, quietMsg{m.kb.seq}))
	}
	if discarded {
		m.discarded(fmt.Sprintf(discardedText, max(m.kb.burst, 2)))
	}
	return tea.Batch(cmds...)
}

// otherInput handles input that is not a key (a mouse or focus report, or a
// sequence bubbletea does not know): it is part of a burst like any key.
func (m *model) otherInput() {
	m.kb.arrive(m.cfg.now(), 1, m.cfg.quiet)
	if m.kb.held != nil {
		m.kb.held = nil
		m.discarded(fmt.Sprintf(discardedText, max(m.kb.burst, 2)))
	}
}

// quiet handles the end of a held key's quiet window.
func (m *model) quiet(msg quietMsg) tea.Cmd {
	h := m.kb.held
	if h == nil || h.seq != msg.seq {
		return nil // cancelled, or already released by a later key
	}
	now := m.cfg.now()
	if end := h.at.Add(m.cfg.quiet); now.Before(end) {
		return m.cfg.after(end.Sub(now), msg)
	}
	return m.release(now)
}

// release applies the held key, whose quiet window has ended at now, if it
// was pressed on the screen that is still shown and the terminal reads
// confirm it arrived alone.
func (m *model) release(now time.Time) tea.Cmd {
	h := m.kb.held
	m.kb.held = nil
	if h == nil || h.screen != m.screen || h.req != m.current() {
		return nil
	}
	if m.cfg.alone != nil && !m.cfg.alone(h.at, now, keySize(h.k)) {
		m.discarded(discardedReadText)
		return nil
	}
	return m.apply(h.k)
}

// discarded says on screen that input was discarded (text is one of the
// discard notices, starting with discardedPrefix), and puts the decision
// prompt's cursor back on Deny: a burst may have moved it. While an earlier
// discard's notice is still shown, the new one replaces it; a discard of
// another burst than that one's also counts them, so that a key pressed
// again and discarded again changes the screen: the human sees that the
// second press did not count either.
func (m *model) discarded(text string) {
	if d, ok := m.screen.(*decideScreen); ok {
		d.denyFocus()
	}
	n := notice{kind: "discarded", text: text, isErr: true, count: 1, burst: m.kb.bursts}
	for _, o := range m.notices {
		if o.kind == n.kind {
			n.count = o.count
			if o.burst != n.burst {
				n.count++
			}
		}
	}
	if n.count > 1 {
		n.text = fmt.Sprintf("input discarded (%d×): %s", n.count, strings.TrimPrefix(text, discardedPrefix))
	}
	m.addNotice(n)
}

// resetKeys forgets a held key: the screen it was pressed on is gone.
func (m *model) resetKeys() {
	m.kb.held = nil
}

// isInputMsg reports whether msg came from the terminal's input although it
// is not a key: a mouse or focus report, or one of bubbletea's messages for
// input it could not parse (unexported types, recognised by name).
func isInputMsg(msg tea.Msg) bool {
	switch msg.(type) {
	case tea.MouseMsg, tea.FocusMsg, tea.BlurMsg:
		return true
	}
	t := reflect.TypeOf(msg)
	if t == nil || t.PkgPath() != reflect.TypeOf(tea.KeyMsg{}).PkgPath() {
		return false
	}
	switch t.Name() {
	case "unknownCSISequenceMsg", "unknownInputByteMsg":
		return true
	}
	return false
}

// readLog records when the terminal delivered input and how many bytes, so
// that a key's neighbours can be judged from the reads themselves: the key
// events' own times are taken on bubbletea's event loop, which renders the
// screen between events and can be slow, spreading a paste over time.
type readLog struct {
	now  func() time.Time
	mu   sync.Mutex
	recs [readLogSize]readRec
	next int // slot of the next record
	n    int // records kept
}

type readRec struct {
	at time.Time
	n  int
}

func newReadLog(now func() time.Time) *readLog {
	return &readLog{now: now}
}

// record notes a read of n bytes now.
func (l *readLog) record(n int) {
	t := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs[l.next] = readRec{at: t, n: n}
	l.next = (l.next + 1) % readLogSize
	l.n = min(l.n+1, readLogSize)
}

// alone reports whether a key that the console received at got and whose
// quiet window ended at until came from a read of its own: exactly one
// read happened after got-quiet and up to until, it happened no later than
// got, it held size bytes (any number when size is 0), and the read before
// it was at least quiet earlier. A key whose read lies quiet or more
// before got (the console was slow to take it) is not judged alone: that
// cannot be told.
func (l *readLog) alone(got, until time.Time, size int, quiet time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	var hit, prev *readRec
	count := 0
	for i := range l.n {
		r := &l.recs[(l.next-1-i+2*readLogSize)%readLogSize]
		if r.at.After(until) {
			continue
		}
		if !r.at.After(got.Add(-quiet)) {
			prev = r
			break
		}
		count++
		hit = r
	}
	switch {
	case count != 1, hit.at.After(got), size > 0 && hit.n != size:
		return false
	case prev == nil:
		// The key's read is the oldest kept: with nothing before it, fine;
		// if older reads were forgotten, nothing can be told.
		return l.n < readLogSize
	}
	return hit.at.Sub(prev.at) >= quiet
}

// wrap returns in with every read recorded in l. A terminal stays a file
// (bubbletea switches it to raw mode and cancels reads through its
// descriptor); closing the wrapper does not close it.
func (l *readLog) wrap(in io.Reader, eofHangsUp bool) io.Reader {
	if f, ok := in.(*os.File); ok {
		return &loggedFile{loggedReader: loggedReader{r: f, log: l, eofHangsUp: eofHangsUp}, f: f}
	}
	return &loggedReader{r: in, log: l, eofHangsUp: eofHangsUp}
}

// loggedReader records each read in log; with eofHangsUp, the end of the
// input is the error ErrHungUp, which ends the console (bubbletea stops
// reading at EOF and runs on).
type loggedReader struct {
	r          io.Reader
	log        *readLog
	eofHangsUp bool
}

func (r *loggedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.log.record(n)
	}
	if r.eofHangsUp && errors.Is(err, io.EOF) {
		err = ErrHungUp
	}
	return n, err
}

type loggedFile struct {
	loggedReader
	f *os.File
}

func (f *loggedFile) Write(p []byte) (int, error) { return f.f.Write(p) }
func (f *loggedFile) Close() error                { return nil }
func (f *loggedFile) Fd() uintptr                 { return f.f.Fd() }
func (f *loggedFile) Name() string                { return f.f.Name() }
