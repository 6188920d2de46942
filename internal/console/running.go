package console

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// Keys of the running commands screen. runningKey opens it from the
// prompt and the idle screen and goes back from it.
const (
	runningKey = 'w'
	stopKey    = 'x'
	confirmKey = 'y'
	outputKey  = 'o'
)

// runningScreen lists the commands the daemon is running (the model's
// running list) with the highlighted one's details. A command can be
// stopped, after a confirmation with a second, different key, and the end
// of its output can be shown. Nothing here decides a request.
type runningScreen struct {
	m    *model
	list pickList[approval.Running]
	// confirm is the run a stop waits to be confirmed for, or "".
	confirm string
	// out is the output last asked for; nil when none was.
	out *runOutput
	// builtAt is the second the list's labels were made for: they show
	// the time each command has run, so View makes them again each second.
	builtAt time.Time
}

// runOutput is the end of a run's output as the daemon last sent it.
type runOutput struct {
	run string
	// waiting: asked, no answer yet.
	waiting bool
	out     *approval.Output
	err     string
}

// openRunning shows the running commands, asking the daemon for them (and
// for their changes from now on) the first time. When they cannot be asked
// for (a console of several daemons, sendRunning) it says why and stays
// where it is.
func (m *model) openRunning() {
	if !m.watching {
		if err := m.sendRunning(approval.Message{Type: approval.MsgWatch}); err != nil {
			m.errorf("could not ask the daemon for the running commands: %v", err)
			return
		}
		m.watching = true
	}
	m.screen = newRunningScreen(m)
	m.scroll = 0
}

func newRunningScreen(m *model) *runningScreen {
	r := &runningScreen{m: m, list: pickList[approval.Running]{title: "Running commands", key: runID}}
	r.build("")
	return r
}

// build makes the list from the model's running commands, with the cursor
// on the run keep when it still runs.
func (r *runningScreen) build(keep string) {
	m := r.m
	now := m.cfg.now()
	r.builtAt = now.Truncate(time.Second)
	r.list.build(m, m.running, func(run approval.Running) string {
		label := fmt.Sprintf("%s  %s  uid %d  session %s  %s", termtext.Esc(run.ID), elapsed(now, run.Started),
			run.Peer.UID, termtext.Esc(run.Session), runCommand(run))
		if run.StoppedBy != "" {
			label += "  (stopping)"
		}
		return label
	}, keep)
}

// runID is the key of run in the list: its id.
func runID(run approval.Running) string { return run.ID }

// runningChanged rebuilds the list after the model's running commands
// changed, keeping the cursor on the run it was on. A stop waiting for its
// confirmation is forgotten when its command has ended meanwhile.
func (r *runningScreen) runningChanged(old []approval.Running) {
	keep := r.list.hoveredKey(old)
	if r.confirm != "" && !slices.ContainsFunc(r.m.running, func(run approval.Running) bool { return run.ID == r.confirm }) {
		r.m.addNotice(notice{text: fmt.Sprintf("%s ended before you confirmed stopping it", termtext.Esc(r.confirm))})
		r.confirm = ""
	}
	r.build(keep)
}

// SetSize fits the list to the new width.
func (r *runningScreen) SetSize(int, int) {
	r.list.setSize(r.m)
}

// classify: scrolling and moving the cursor act at once; q, w, x, y, o and
// Esc are held; while a stop waits for its confirmation every key is held,
// since any key but y cancels it.
func (r *runningScreen) classify(k tea.KeyMsg) keyKind {
	if r.confirm != "" {
		return kindAction
	}
	if movesKey(k) {
		return kindNav
	}
	switch singleRune(k) {
	case 'q', runningKey, stopKey, outputKey:
		return kindAction
	}
	if k.Type == tea.KeyEsc {
		return kindAction
	}
	return kindNone
}

// Update scrolls, moves the cursor, asks to stop the highlighted command
// and stops it once confirmed, asks for its output, goes back to the
// request or quits; anything that is not a key goes to the list.
func (r *runningScreen) Update(msg tea.Msg) tea.Cmd {
	m := r.m
	k, isKey := msg.(tea.KeyMsg)
	if isKey && r.confirm != "" {
		id := r.confirm
		r.confirm = ""
		if singleRune(k) == confirmKey {
			m.stop(id)
		} else {
			m.addNotice(notice{text: fmt.Sprintf("%s was not stopped", termtext.Esc(id))})
		}
		return nil
	}
	if cmd, done := r.list.update(m, msg); done || !isKey {
		return cmd
	}
	switch c := singleRune(k); {
	case c == 'q':
		return m.quit()
	case c == runningKey || k.Type == tea.KeyEsc && !k.Alt:
		return m.showPrompt()
	case c == stopKey:
		if run, ok := r.list.hovered(m.running); ok && run.StoppedBy == "" {
			r.confirm = run.ID
		}
	case c == outputKey:
		if run, ok := r.list.hovered(m.running); ok {
			r.askOutput(run.ID)
		}
	}
	return nil
}

// askOutput asks the daemon for the end of run's output.
func (r *runningScreen) askOutput(run string) {
	if err := r.m.sendRunning(approval.Message{Type: approval.MsgOutput, Run: run}); err != nil {
		r.m.errorf("could not ask for the output of %s: %v", termtext.Esc(run), err)
		return
	}
	r.out = &runOutput{run: run, waiting: true}
	r.m.inflight = append(r.m.inflight, sent{link: 0, typ: approval.MsgOutput, run: run})
}

// stop asks the daemon to stop the running command id, unless a stop of
// it is on its way.
func (m *model) stop(id string) {
	if slices.ContainsFunc(m.inflight, func(s sent) bool { return s.typ == approval.MsgStop && s.run == id }) {
		return
	}
	if err := m.sendRunning(approval.Message{Type: approval.MsgStop, Run: id}); err != nil {
		m.errorf("could not stop %s: %v", termtext.Esc(id), err)
		return
	}
	m.inflight = append(m.inflight, sent{link: 0, typ: approval.MsgStop, run: id})
}

// runningMsg takes a new list of running commands from the daemon.
func (m *model) runningMsg(msg approval.Message) {
	old := m.running
	m.running, m.runningOmitted, m.runningListed = msg.Running, msg.RunningOmitted, true
	if r, ok := m.screen.(*runningScreen); ok {
		r.runningChanged(old)
	}
}

// outputMsg takes the end of a run's output, or the error the daemon
// answered instead (err), for the running screen when it asked for it.
func (m *model) outputMsg(run string, out *approval.Output, err string) {
	r, ok := m.screen.(*runningScreen)
	if !ok || r.out == nil || r.out.run != run || run == "" {
		return
	}
	r.out = &runOutput{run: run, out: out, err: err}
}

// View renders the list, the highlighted command's details, and the end of
// its output when it was asked for.
func (r *runningScreen) View() (top, body, bottom []string) {
	m := r.m
	st := m.st
	if !m.cfg.now().Truncate(time.Second).Equal(r.builtAt) {
		r.build(r.list.hoveredKey(m.running))
	}
	top = append(top, "", st.bold.Render("RUNNING COMMANDS"))
	top = append(top, wrapText("Commands the daemon runs now, allowed by a console, a rule or a session grant. Stopping one sends it SIGTERM and, kill_grace later, SIGKILL, as command_timeout does.", m.width)...)
	switch {
	case !m.runningListed:
		body = append(body, "", "asking the daemon for the running commands…")
	case r.list.form == nil:
		body = append(body, "", "no command is running")
	default:
		body = append(body, r.list.view(m.width, m.runningOmitted, "command", approval.MaxRunningListed)...)
		if run, ok := r.list.hovered(m.running); ok {
			body = append(body, "")
			body = append(body, runDetails(st, run, m.width, m.cfg.now())...)
			if r.out != nil && r.out.run == run.ID {
				body = append(body, "")
				body = append(body, r.outputView(m.width)...)
			}
		}
	}
	bottom = append(bottom, m.separator())
	if r.confirm != "" {
		i := slices.IndexFunc(m.running, func(run approval.Running) bool { return run.ID == r.confirm })
		what := termtext.Esc(r.confirm)
		if i >= 0 {
			what += " (" + runCommand(m.running[i]) + ")"
		}
		bottom = append(bottom, styled(st.danger, wrapText(fmt.Sprintf("Stop %s? Press y to stop it (SIGTERM, then SIGKILL after kill_grace); any other key keeps it running.", what), m.width))...)
		return top, fit(body, m.width), bottom
	}
	bottom = append(bottom, m.keyHelp([][2]string{{"↑/↓", "choose"}, {"x", "stop the highlighted command"}, {"o", "show the end of its output"},
		{"esc/w", "back"}, {"q", m.quitText()}})...)
	return top, fit(body, m.width), bottom
}

// outputView renders the end of a run's output: each stream's last lines,
// escaped (control characters and escape sequences are shown, never
// sent to the terminal) and wrapped, every continuation marked.
func (r *runningScreen) outputView(width int) []string {
	st := r.m.st
	o := r.out
	switch {
	case o.waiting:
		return []string{st.dim.Render("asking the daemon for the output…")}
	case o.err != "":
		return styled(st.warn, wrapText("the output could not be shown: "+termtext.Esc(o.err), width))
	case o.out == nil:
		return nil
	}
	at := o.out.At.In(r.m.cfg.now().Location()).Format(time.TimeOnly)
	out := styled(st.bold, wrapText(fmt.Sprintf("END OF THE OUTPUT as of %s (the last %d lines of each stream, at most %d bytes; press o again to refresh)",
		at, approval.MaxOutputLines, approval.MaxOutputBytes), width))
	out = append(out, streamLines(st, "stdout", o.out.Stdout, o.out.StdoutBytes, width)...)
	for i, e := range o.out.Stderr {
		var total int64
		if i < len(o.out.StderrBytes) {
			total = o.out.StderrBytes[i]
		}
		out = append(out, streamLines(st, fmt.Sprintf("stderr of stage %d", i+1), e, total, width)...)
	}
	return out
}

// streamLines renders one stream's end under a heading saying how much of
// it is shown: each line escaped as the full stdin view escapes text
// (termtext.EscapeStrict: control characters, escape sequences, bidi and
// invisible characters and invalid UTF-8 become visible escapes) and
// wrapped, continuations marked where the output cannot write.
func streamLines(st *styles, name string, b []byte, total int64, width int) []string {
	head := fmt.Sprintf("── %s: %d %s", name, total, termtext.Plural(int(total), "byte"))
	if int64(len(b)) < total {
		head += fmt.Sprintf(", the last %d shown", len(b))
	}
	out := styled(st.dim, wrapText(head, width))
	if len(b) == 0 {
		return out
	}
	cont := st.cont.Render(contMark)
	vw := max(width-1-2, 1)
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		e, _ := termtext.EscapeStrict(line)
		for j, part := range termtext.Wrap(e, vw) {
			if j == 0 {
				out = append(out, "  "+part)
			} else {
				out = append(out, cont+part)
			}
		}
	}
	return out
}

// runCommand is the command line of run (see commandText).
func runCommand(run approval.Running) string {
	return commandText(run.Pipeline, run.Elided)
}

// commandText is the command line of pipeline, escaped and quoted, or,
// when the daemon elided a pipeline too long to list (e is not nil), what
// stands in for it. The running and the grants screens show commands so.
func commandText(pipeline [][]string, e *approval.Elided) string {
	if e != nil {
		return fmt.Sprintf("too long to list: %d bytes in %d %s (%d %s), sha256 %s",
			e.Bytes, e.Stages, termtext.Plural(e.Stages, "stage"), e.Args, termtext.Plural(e.Args, "argument"), termtext.Esc(e.SHA256))
	}
	line, _ := termtext.CommandLine(pipeline)
	return line
}

// elapsed is the time since start, to the second.
func elapsed(now, start time.Time) string {
	d := now.Sub(start).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String()
}

func runDetails(st *styles, run approval.Running, width int, now time.Time) []string {
	l := newLines(st, width)
	l.field("run", termtext.Esc(run.ID), nil)
	l.field("command", runCommand(run), &st.bold)
	if run.Privileged {
		l.field("runs", "as "+termtext.EscStrict(run.RunAs), &st.danger)
	} else {
		l.field("runs", "as "+termtext.EscStrict(run.RunAs)+" (unprivileged)", nil)
	}
	l.field("running", fmt.Sprintf("%s, since %s", elapsed(now, run.Started), run.Started.In(now.Location()).Format(time.DateTime)), nil)
	l.field("asked by", fmt.Sprintf("uid %d (%s), pid %d, %s", run.Peer.UID, termtext.EscStrict(run.Peer.User), run.Peer.PID, termtext.EscStrict(run.Peer.Exe)), nil)
	l.field("session", termtext.Esc(run.Session)+" (claimed by the agent)", nil)
	if run.Host != "" {
		l.field("host", termtext.Esc(run.Host)+" (claimed by the agent)", nil)
	}
	l.field("allowed by", termtext.Esc(run.By), nil)
	l.field("request", termtext.Esc(run.Request), nil)
	if run.StoppedBy != "" {
		l.field("stopped by", termtext.Esc(run.StoppedBy)+" · being killed", &st.danger)
	}
	return l.out
}
