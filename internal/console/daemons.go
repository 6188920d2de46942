package console

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// daemonState is what the model knows of one daemon it is connected to
// (a link, link.go): its names, its connection and its session grants.
type daemonState struct {
	// name is how the human named it (Daemon.Name); "" for the one daemon
	// of Run.
	name string
	// host, instance and version are from the daemon's latest greeting.
	host, instance, version string
	// epoch is the number of the connection whose messages are current;
	// up is whether that connection is open.
	epoch uint64
	up    bool
	// everUp: a connection was open at some point.
	everUp bool
	// err is why the connection is down; attempt and retry are the next
	// reconnection attempt and when it is due.
	err     string
	attempt int
	retry   time.Time

	grants        []approval.Grant
	grantsOmitted int
}

// heldGrant is a session grant with the daemon that holds it.
type heldGrant struct {
	approval.Grant
	link int
}

// key names the grant among every daemon's: grant ids are only unique
// within one daemon.
func (g heldGrant) key() string { return fmt.Sprintf("%d/%s", g.link, g.ID) }

// newDaemonStates makes the state for the daemons named names, none of
// them connected yet; with no names, one unnamed daemon that is connected
// (Run's, whose greeting was read before the model existed), of version
// version.
func newDaemonStates(names []string, version string) []*daemonState {
	if len(names) == 0 {
		return []*daemonState{{up: true, everUp: true, version: version}}
	}
	ds := make([]*daemonState, len(names))
	for i, n := range names {
		ds[i] = &daemonState{name: n}
	}
	return ds
}

// label names daemon i for the human: the host name it sent and, when
// there are several daemons, how the human named it. It is escaped.
func (m *model) label(i int) string {
	if i < 0 || i >= len(m.daemons) {
		return "an unknown daemon"
	}
	d := m.daemons[i]
	host, name := termtext.Esc(d.host), termtext.Esc(d.name)
	switch {
	case host != "" && name != "" && len(m.daemons) > 1:
		return host + " (" + name + ")"
	case host != "":
		return host
	case name != "":
		return name
	}
	return "agent-sudod"
}

// current reports whether a message of connection epoch of daemon i is
// from its current connection; anything older is dropped.
func (m *model) currentConn(i int, epoch uint64) bool {
	return i >= 0 && i < len(m.daemons) && m.daemons[i].up && m.daemons[i].epoch == epoch
}

// send queues msg for daemon i's connection epoch.
func (m *model) sendTo(i int, epoch uint64, msg approval.Message) error {
	if m.cfg.sendTo != nil {
		return m.cfg.sendTo(i, epoch, msg)
	}
	if !m.currentConn(i, epoch) {
		return fmt.Errorf("the connection to the daemon that showed it is gone; nothing was sent")
	}
	return m.cfg.send(msg)
}

// sendRunning sends a watch, output or stop message. The running commands
// are listed only by a console of one daemon for now: with several, it
// refuses rather than guess which daemon a command runs on.
func (m *model) sendRunning(msg approval.Message) error {
	if len(m.daemons) != 1 {
		return fmt.Errorf("the running commands are listed only by a console of one daemon; run agent-sudo approve for that daemon alone")
	}
	return m.sendTo(0, m.daemons[0].epoch, msg)
}

// linkUp: daemon i's connection epoch is open. What an older connection
// showed is forgotten (linkDown already did so), and the greeting says
// whether the daemon is still the same instance.
func (m *model) linkUp(msg linkUpMsg) tea.Cmd {
	if msg.link < 0 || msg.link >= len(m.daemons) {
		return nil
	}
	d := m.daemons[msg.link]
	cmd := m.forget(msg.link)
	restarted := d.everUp && d.instance != "" && msg.hello.Instance != d.instance
	again := d.everUp
	d.epoch, d.up, d.everUp = msg.epoch, true, true
	d.host, d.instance, d.version = msg.hello.DaemonHost, msg.hello.Instance, msg.hello.Version
	d.err, d.attempt, d.retry = "", 0, time.Time{}
	switch {
	case restarted:
		m.addNotice(notice{kind: "link " + fmt.Sprint(msg.link), text: fmt.Sprintf("reconnected to %s: it restarted (a new instance); what waits there is listed again", m.label(msg.link))})
	case again:
		m.addNotice(notice{kind: "link " + fmt.Sprint(msg.link), text: fmt.Sprintf("reconnected to %s; what waits there is listed again", m.label(msg.link))})
	}
	return cmd
}

// linkDown: daemon i's connection broke, or a reconnection attempt failed.
// Everything the connection showed leaves the screen at once, since no
// decision on it can be sent any more: the daemon lists again what still
// waits when the link is back.
func (m *model) linkDown(msg linkDownMsg) tea.Cmd {
	if msg.link < 0 || msg.link >= len(m.daemons) {
		return nil
	}
	d := m.daemons[msg.link]
	wasUp := d.up
	d.up = false
	d.attempt, d.retry = msg.attempt, msg.retry
	d.err = ""
	if msg.err != nil {
		d.err = msg.err.Error()
		if notRunning(msg.err) {
			d.err += "; agent-sudod is not running: it may have failed to start (journalctl -u agent-sudo says why)"
		}
	}
	hidden := slices.ContainsFunc(m.queue, func(r *request) bool { return r.link == msg.link })
	cmd := m.forget(msg.link)
	if wasUp {
		text := fmt.Sprintf("lost the connection to %s; reconnecting", m.label(msg.link))
		if hidden {
			text += "; its requests are hidden until then, and can be decided once they show again"
		}
		m.addNotice(notice{kind: "link " + fmt.Sprint(msg.link), text: text, isErr: true})
	}
	return cmd
}

// forget drops everything daemon i's connections showed: its requests,
// its grants, the decisions and revocations sent to it and not answered
// (a decision may or may not have arrived: if its request still waits it
// is listed again), and the decisions remembered for their resolved
// message.
func (m *model) forget(i int) tea.Cmd {
	onScreen := m.current() != nil && m.current().link == i
	for _, s := range m.inflight {
		if s.link == i && s.typ == approval.MsgDecide {
			m.errorf("no answer came from %s to your decision (%s) on request %s before the connection ended; if it still waits it will show again",
				m.label(i), choiceText(s.choice), termtext.Esc(s.id))
		}
	}
	m.inflight = slices.DeleteFunc(m.inflight, func(s sent) bool { return s.link == i })
	m.queue = slices.DeleteFunc(m.queue, func(r *request) bool { return r.link == i })
	m.confirmed = slices.DeleteFunc(m.confirmed, func(c decided) bool { return c.link == i })
	m.setGrants(i, nil, 0)
	if len(m.daemons) == 1 {
		// The running list was asked on the old connection.
		m.watching, m.running, m.runningOmitted, m.runningListed = false, nil, 0, false
	}
	if onScreen {
		return m.promptChanged()
	}
	return nil
}

// setGrants replaces daemon i's grants and rebuilds the model's list of
// every daemon's grants.
func (m *model) setGrants(i int, grants []approval.Grant, omitted int) {
	old := m.grants
	d := m.daemons[i]
	// The daemon ends a grant on elapsed time: its expiry is counted from
	// now on this console's elapsed-time clock (time.Now's monotonic
	// reading), not read from the daemon's wall clock, which a clock step
	// moves.
	now := m.cfg.now()
	grants = slices.Clone(grants)
	for k := range grants {
		if ms := grants[k].ExpiresInMS; ms > 0 {
			grants[k].Expires = now.Add(time.Duration(ms) * time.Millisecond)
		}
	}
	d.grants, d.grantsOmitted = grants, omitted
	m.grants, m.grantsOmitted = nil, 0
	for j, d := range m.daemons {
		for _, g := range d.grants {
			m.grants = append(m.grants, heldGrant{Grant: g, link: j})
		}
		m.grantsOmitted += d.grantsOmitted
	}
	if g, ok := m.screen.(*grantsScreen); ok {
		g.grantsChanged(old)
	}
}

// daemonLines says, when the console has several daemons or its one
// daemon is not connected, which daemons it is connected to and which it
// is reconnecting to, and why.
func (m *model) daemonLines() []string {
	if len(m.daemons) == 1 && m.daemons[0].up {
		return nil
	}
	var out []string
	for i, d := range m.daemons {
		var s string
		switch {
		case d.up:
			s = fmt.Sprintf("● %s: connected", m.label(i))
		case d.attempt == 0:
			s = fmt.Sprintf("○ %s: connecting…", m.label(i))
		default:
			when := "now"
			if left := d.retry.Sub(m.cfg.now()); left > 0 {
				when = "in " + roundUp(left).String()
			}
			s = fmt.Sprintf("○ %s: RECONNECTING (attempt %d %s)", m.label(i), d.attempt, when)
			if d.err != "" {
				s += ": " + termtext.Esc(lastLine(d.err))
			}
		}
		st := m.st.dim
		if !d.up {
			st = m.st.warn
		}
		out = append(out, styled(st, wrapText(s, m.width))...)
	}
	return out
}

// lastLine shortens a multi-line error to its last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// notRunning reports whether err, a failed dial or a broken connection,
// means that no daemon is there: its socket is gone (ENOENT), nothing
// listens (ECONNREFUSED), or the connection was reset before the greeting
// (ECONNRESET), which is how systemd ends the connections waiting for a
// daemon that fails to start.
func notRunning(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
