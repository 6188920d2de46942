package console

import (
	"fmt"
	"slices"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// Limits of what the console keeps and shows.
const (
	maxNotices = 4
	// maxBriefNotices is how many notices a request's first screen shows,
	// the newest, one line each.
	maxBriefNotices = 3
	// maxConfirmed bounds the decisions remembered for their resolved
	// message.
	maxConfirmed = 16
	noticeTTL    = 2 * time.Minute
	maxNoteLen   = 200
	defaultCols  = 80
	defaultRows  = 24
)

// Messages the model gets besides keys and window sizes.
type (
	// daemonMsg is one message from daemon link's connection epoch. A
	// pending or detail message in full has passed approval.CheckHash
	// (approval.Client.Recv): its request hashes to its Hash.
	daemonMsg struct {
		m     approval.Message
		link  int
		epoch uint64
	}
	// unverifiedMsg is a pending or detail message from daemon link's
	// connection epoch whose request does not hash to its Hash
	// (approval.ErrHashMismatch): it is neither shown nor decided on.
	unverifiedMsg struct {
		m     approval.Message
		link  int
		epoch uint64
	}
	// disconnectedMsg: the approver channel broke; the console stops.
	disconnectedMsg struct{ err error }
	// tickMsg redraws the countdown once a second.
	tickMsg struct{}
	// guardMsg redraws when the key guard of a prompt ends.
	guardMsg struct{}
)

// config is what the model needs from its surroundings; Run fills it in and
// tests replace the clock, the connection and the bell.
type config struct {
	// cols and rows are the terminal's size when the console starts, from
	// the terminal itself; 80x24 when zero. The first frame is drawn
	// before bubbletea's first WindowSizeMsg: drawn for a wider terminal
	// than the real one, its rows would wrap there.
	cols, rows int
	now        func() time.Time
	guard      time.Duration
	// quiet is the quiet window around a key that acts (QuietWindow).
	quiet time.Duration
	// after returns a command that delivers msg after d (tea.Tick).
	after func(d time.Duration, msg tea.Msg) tea.Cmd
	// alone, when set, confirms from the terminal's reads that a key
	// received at got, size bytes long, had no neighbour within quiet up
	// to until (readLog.alone).
	alone func(got, until time.Time, size int) bool
	// sendTo queues a message for daemon link's connection epoch without
	// blocking (link.send); it fails when that connection is gone.
	sendTo func(link int, epoch uint64, m approval.Message) error
	// send, used when sendTo is nil, queues a message for the one daemon
	// of a console whose daemons is empty.
	send func(approval.Message) error
	// bell rings the terminal bell (and asks for a desktop notification,
	// desktop.go) for the request s, which has just arrived or changed.
	bell     func(s *approval.Shown)
	renderer *lipgloss.Renderer
	// mux names the terminal multiplexer the console runs under, or "".
	mux string
	// daemons names the daemons (Daemon.Name), which are not connected
	// yet; empty means one unnamed daemon, already connected, of version
	// version.
	daemons []string
	version string
	// stopsDaemon: quitting this console stops agent-sudod (it runs on
	// the daemon's own terminal, agent-sudod --tty).
	stopsDaemon bool
}

// request is one pending request as the console holds it.
type request struct {
	// link and epoch are the daemon and the connection that announced
	// it: a decision goes there and nowhere else.
	link  int
	epoch uint64
	id    string
	// hash is the announced hash, which for a request held in full is
	// the hash of shown as received (daemonMsg); it goes into the
	// decision.
	hash  string
	shown *approval.Shown
	// summary is set when the daemon announced the request as a summary:
	// shown then lacks the pipeline, programs and env, and the request
	// cannot be allowed until the detail has loaded (loaded).
	summary *approval.Summary
	loaded  bool
	// detailAsked: the detail was requested; detailErr: the daemon could
	// not send it.
	detailAsked bool
	detailErr   string
	// escaped: something in the request had to be escaped to be shown.
	escaped bool
	// approvedBy names who allowed so far a request that needs more than
	// one person (shown.Approvals), as the daemon's approved message said.
	approvedBy []string

	// cache and fullCache are the rendered first screen and details
	// (details) for cacheWidth, the first screen for cacheRoom lines
	cacheWidth int
	cacheRoom  int
	cache      []string
	fullCache  []string
	// stdinCache is the full stdin view rendered for stdinWidth.
	stdinWidth int
	stdinCache []string
}

// submitted returns the decision this console sent on r and the daemon has
// not answered yet, or "" when none. It is read from inflight, keyed by the
// request's id, so it survives r being replaced by a newer version of the
// same request (its detail, or a change announced while it waited).
func (m *model) submitted(r *request) approval.Choice {
	i := slices.IndexFunc(m.inflight, func(s sent) bool { return s.typ == approval.MsgDecide && s.link == r.link && s.id == r.id })
	if i < 0 {
		return ""
	}
	return m.inflight[i].choice
}

// sent is a decide, revoke or stop waiting for its result, from daemon
// link.
type sent struct {
	link   int
	typ    string
	id     string // decide: the request
	grant  string // revoke: the grant
	run    string // stop, output: the run
	choice approval.Choice
}

// notice is a one-line message shown under the header for a while.
type notice struct {
	text  string
	isErr bool
	at    time.Time
	// kind deduplicates notices that replace each other ("" never does).
	kind string
	// count is how many bursts of input were discarded while a discard
	// notice was shown, and burst the one this notice is about (the
	// keyboard's bursts); both 0 for other notices.
	count int
	burst uint64
}

// model is the console's bubbletea model. All its methods run on
// bubbletea's event loop (or a test's goroutine), never concurrently.
type model struct {
	cfg           config
	st            *styles
	keymap        *huh.KeyMap
	width, height int

	// daemons are the daemons the console is connected to (daemons.go).
	daemons []*daemonState
	queue   []*request // arrival order; queue[0] is on screen
	// confirmed holds the requests this console decided whose result came
	// before their resolved message, newest last: the resolved message
	// still says who decided (and names a new grant).
	confirmed []decided
	// grants are every daemon's session grants.
	grants []heldGrant
	// grantsOmitted counts the grants the daemons did not list.
	grantsOmitted int
	// running are the commands the daemon runs, as it last listed them
	// (runningListed) once asked to (watching); runningOmitted counts the
	// ones it did not list.
	running        []approval.Running
	runningOmitted int
	runningListed  bool
	watching       bool
	inflight       []sent
	notices        []notice

	// screen is the active component (component.go): what the keyboard
	// talks to and what shows under the notices; never nil.
	screen component
	// kb is the keyboard's timing (keyguard.go).
	kb keyboard
	// shownAt is when the current prompt appeared, or when the last key
	// was dropped; keys before shownAt+guard are dropped.
	shownAt time.Time
	// scroll is the body's scroll position.
	scroll int

	fatal    error
	quitting bool
}

func newModel(cfg config) *model {
	if cfg.now == nil {
		cfg.now = time.Now
	}
	if cfg.guard <= 0 {
		cfg.guard = DefaultGuard
	}
	if cfg.quiet <= 0 {
		cfg.quiet = QuietWindow
	}
	if cfg.after == nil {
		cfg.after = func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		}
	}
	if cfg.bell == nil {
		cfg.bell = func(*approval.Shown) {}
	}
	if cfg.renderer == nil {
		cfg.renderer = lipgloss.DefaultRenderer()
	}
	m := &model{cfg: cfg, st: newStyles(cfg.renderer), keymap: newKeyMap(), width: defaultCols, height: defaultRows,
		daemons: newDaemonStates(cfg.daemons, cfg.version)}
	if cfg.cols > 0 && cfg.rows > 0 {
		m.width, m.height = cfg.cols, cfg.rows
	}
	m.screen = newDecideScreen(m)
	return m
}

// newKeyMap is huh's key map with every binding that could submit, leave or
// filter a field removed: the model itself turns Enter, a, s and d into
// decisions, and nothing else may. A binding without keys never matches,
// even when huh enables it.
func newKeyMap() *huh.KeyMap {
	k := huh.NewDefaultKeyMap()
	none := key.NewBinding()
	k.Quit = none
	k.Select.Next, k.Select.Prev, k.Select.Submit = none, none, none
	k.Select.Filter, k.Select.SetFilter, k.Select.ClearFilter = none, none, none
	k.Select.GotoTop, k.Select.GotoBottom = none, none
	k.Select.HalfPageUp, k.Select.HalfPageDown = none, none
	k.Input.Next, k.Input.Prev, k.Input.Submit, k.Input.AcceptSuggestion = none, none, none, none
	return k
}

// Init starts the countdown ticker.
func (m *model) Init() tea.Cmd {
	return tick()
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return tickMsg{} })
}

// Update handles one message.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		if msg.Width > 0 {
			m.width = msg.Width
		}
		if msg.Height > 0 {
			m.height = msg.Height
		}
		m.screen.SetSize(m.width, m.height)
		for _, r := range m.queue {
			r.cache, r.fullCache, r.stdinCache = nil, nil, nil
		}
		m.clampScroll()
		return m, nil
	case tea.KeyMsg:
		return m, m.key(msg)
	case daemonMsg:
		if !m.currentConn(msg.link, msg.epoch) {
			return m, nil // from a connection that has ended
		}
		return m, m.daemon(msg.link, msg.epoch, msg.m)
	case unverifiedMsg:
		if !m.currentConn(msg.link, msg.epoch) {
			return m, nil
		}
		return m, m.unverified(msg.link, msg.m)
	case linkUpMsg:
		return m, m.linkUp(msg)
	case linkDownMsg:
		return m, m.linkDown(msg)
	case disconnectedMsg:
		m.fatal = msg.err
		m.quitting = true
		return m, tea.Quit
	case tickMsg:
		m.expireNotices()
		return m, tick()
	case guardMsg:
		return m, nil
	case quietMsg:
		return m, m.quiet(msg)
	}
	if isInputMsg(msg) {
		m.otherInput()
		return m, nil
	}
	// Anything else (the note's cursor blink, huh's own messages) belongs
	// to the screen in use.
	return m, m.screen.Update(msg)
}

func (m *model) current() *request {
	if len(m.queue) == 0 {
		return nil
	}
	return m.queue[0]
}

// find returns the request id from daemon link and its place in the
// queue, or -1 and nil.
func (m *model) find(link int, id string) (int, *request) {
	for i, r := range m.queue {
		if r.link == link && r.id == id {
			return i, r
		}
	}
	return -1, nil
}

// guarded reports whether keys are being dropped.
func (m *model) guarded() bool {
	return m.cfg.now().Before(m.shownAt.Add(m.cfg.guard))
}

// armGuard starts the key guard now and returns the command that redraws
// the screen when it ends.
func (m *model) armGuard() tea.Cmd {
	m.shownAt = m.cfg.now()
	return m.cfg.after(m.cfg.guard, guardMsg{})
}

// promptChanged is called when the request on screen changes: the prompt
// appears afresh for it (showPrompt), except on the grants screen, where
// it appears when the human goes back, and on the running commands screen. Either way a held key is forgotten
// and the body scrolls to its top.
func (m *model) promptChanged() tea.Cmd {
	switch m.screen.(type) {
	case *grantsScreen, *runningScreen:
	default:
		return m.showPrompt()
	}
	m.scroll = 0
	m.resetKeys()
	if c := m.current(); c != nil {
		m.askDetail(c)
	}
	return nil
}

// showPrompt shows a new decision prompt for the current request, with
// Deny focused and the body at its top, forgets a held key and arms the
// guard; or the idle screen when nothing waits.
func (m *model) showPrompt() tea.Cmd {
	m.scroll = 0
	m.resetKeys()
	m.screen = newDecideScreen(m)
	c := m.current()
	if c == nil {
		return nil
	}
	m.askDetail(c)
	return m.armGuard()
}

// apply does what k does on the current screen. Keys reach it through key
// (keyguard.go), which times them: keys that act only when they arrived
// alone.
func (m *model) apply(k tea.KeyMsg) tea.Cmd {
	return m.screen.Update(k)
}

// singleRune returns the one character k typed, or 0 when k is anything
// else: a special key, Alt with a character, a paste, or several characters
// that arrived together (typed faster than they were read).
func singleRune(k tea.KeyMsg) rune {
	if k.Type != tea.KeyRunes || k.Alt || k.Paste || len(k.Runes) != 1 {
		return 0
	}
	return k.Runes[0]
}

// isEnter reports whether k is a plain Enter, not part of a paste.
func isEnter(k tea.KeyMsg) bool {
	return k.Type == tea.KeyEnter && !k.Alt && !k.Paste
}

// isNavKey reports whether k moves a list's cursor.
func isNavKey(k tea.KeyMsg) bool {
	switch k.Type {
	case tea.KeyUp, tea.KeyDown:
		return !k.Alt && !k.Paste
	}
	r := singleRune(k)
	return r == 'j' || r == 'k'
}

// scrollKey returns how far k scrolls the details, in pages (±1) or to an
// end (±2).
func scrollKey(k tea.KeyMsg) (int, bool) {
	switch k.Type {
	case tea.KeyPgUp:
		return -1, true
	case tea.KeyPgDown:
		return 1, true
	case tea.KeyHome:
		return -2, true
	case tea.KeyEnd:
		return 2, true
	}
	return 0, false
}

// quit is what q and Ctrl-C ask for: the console ends, which decides
// nothing, unless it is agent-sudod's own console and requests wait: then
// stopping the daemon (which ends them unrun) is confirmed first.
func (m *model) quit() tea.Cmd {
	if m.cfg.stopsDaemon && len(m.queue) > 0 {
		return m.confirmStop()
	}
	return m.exit()
}

// exit ends the console.
func (m *model) exit() tea.Cmd {
	m.quitting = true
	return tea.Quit
}

// quitShort says what q does in few words, for the decision prompt's keys.
func (m *model) quitShort() string {
	if m.cfg.stopsDaemon {
		return "stop agent-sudod"
	}
	return "quit"
}

// quitText says what q does, for the key help.
func (m *model) quitText() string {
	if m.cfg.stopsDaemon {
		return "stop agent-sudod"
	}
	return "quit (decides nothing)"
}

// decide sends the human's choice on the current request.
func (m *model) decide(c approval.Choice, note string) tea.Cmd {
	r := m.current()
	if r == nil || m.submitted(r) != "" {
		return nil
	}
	if !r.complete() && c != approval.DenyOnce {
		m.errorf("request %s cannot be allowed: its full text has not been loaded and shown yet (deny works)", termtext.Esc(r.id))
		return nil
	}
	if why := r.shown.GrantRefusal(); c == approval.AllowSession && why != "" {
		// The daemon would refuse it for the same reason (Decide).
		m.errorf("request %s cannot be allowed for the session: %s", termtext.Esc(r.id), why)
		return nil
	}
	switch m.screen.(type) {
	case *noteScreen, *confirmScreen:
		// The note has been given, or the grant confirmed; the request
		// shows with the decision sent.
		m.screen = newDecideScreen(m)
	}
	msg := approval.Message{Type: approval.MsgDecide, ID: r.id, Hash: r.hash, Decision: c, Note: note}
	if err := m.sendTo(r.link, r.epoch, msg); err != nil {
		m.errorf("could not send your decision on request %s: %v", termtext.Esc(r.id), err)
		return m.promptChanged()
	}
	m.inflight = append(m.inflight, sent{link: r.link, typ: approval.MsgDecide, id: r.id, choice: c})
	return nil
}

// startNote asks for the optional note that goes with a denial.
func (m *model) startNote() tea.Cmd {
	n := newNoteScreen(m)
	m.screen = n
	return n.form.Init()
}

func (m *model) formWidth() int {
	return max(m.width-1, 20)
}

// openGrants shows the session grants.
func (m *model) openGrants() {
	m.screen = newGrantsScreen(m)
	m.scroll = 0
}

// revoke asks the daemon that holds the session grant g to revoke it,
// unless a revoke of it is on its way.
func (m *model) revoke(g heldGrant) {
	id := g.ID
	if slices.ContainsFunc(m.inflight, func(s sent) bool { return s.link == g.link && s.typ == approval.MsgRevoke && s.grant == id }) {
		return
	}
	if g.link < 0 || g.link >= len(m.daemons) {
		return
	}
	if err := m.sendTo(g.link, m.daemons[g.link].epoch, approval.Message{Type: approval.MsgRevoke, Grant: id}); err != nil {
		m.errorf("could not revoke session grant %s: %v", termtext.Esc(id), err)
		return
	}
	m.inflight = append(m.inflight, sent{link: g.link, typ: approval.MsgRevoke, grant: id})
}

func (m *model) errorf(format string, args ...any) {
	m.addNotice(notice{text: fmt.Sprintf(format, args...), isErr: true})
}

// addNotice shows n under the header, replacing an older notice of the same
// kind, and keeps the newest few.
func (m *model) addNotice(n notice) {
	n.at = m.cfg.now()
	if n.kind != "" {
		m.notices = slices.DeleteFunc(m.notices, func(o notice) bool { return o.kind == n.kind })
	}
	m.notices = append(m.notices, n)
	if len(m.notices) > maxNotices {
		m.notices = slices.Delete(m.notices, 0, len(m.notices)-maxNotices)
	}
}

func (m *model) expireNotices() {
	now := m.cfg.now()
	m.notices = slices.DeleteFunc(m.notices, func(n notice) bool { return now.Sub(n.at) > noticeTTL })
}

// guardText formats the guard for messages: "0.5s".
func guardText(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}
