// Package console is the human's side of the approver channel: a terminal
// user interface that shows each request waiting for approval and sends the
// human's decision to agent-sudod.
//
// "agent-sudo approve" runs it against the daemon's approver socket, and
// "agent-sudod --tty" runs it on the daemon's own terminal; both call [Run]
// (or [DialAndRun]) with a connection and a terminal. The protocol is the
// JSON lines of package approval ([approval.Message]): the daemon sends
// hello, grants and one pending message per waiting request, then live
// pending, resolved and grants messages; the console sends decide and
// revoke, each answered by a result.
//
// # Threat
//
// The agent whose request is on screen controls almost every string in it
// and may also be able to type: it runs as the same user in a terminal next
// door, or shares a terminal multiplexer with the human. The console is
// built so that neither lets it get a command approved that the human did
// not mean to approve:
//
//   - Every string from the daemon (arguments, program paths, environment,
//     reason, session, host, id, user name, executable, and the daemon's own
//     "by" and "error" texts) passes through package approval/render before
//     it reaches the screen, so control sequences, bidirectional overrides
//     and invisible characters are shown as escapes (\x1b, \u202e) instead
//     of acting on the terminal. When anything had to be escaped the request
//     carries a prominent notice. Characters whose width the terminal and
//     the console's libraries disagree on are escaped too where the text
//     must be read exactly (the command line, stages, directory,
//     environment, names), so that what is shown is laid out as it is
//     drawn. Long values are wrapped, never cut, and continuation lines are
//     marked in a column the request cannot write to.
//   - Every line is measured with render.Width, the console's one width
//     function, which never counts a character narrower than bubbletea or
//     the terminal draws it, and fits in the terminal's width less one
//     column before bubbletea sees it: bubbletea never cuts a line and the
//     terminal never wraps one onto a row the console does not know about
//     (which would scroll the command away and leave the agent's text in
//     its place).
//   - The pipeline is shown once as a shell command line that can be copied
//     and pasted, and once per stage with the program the daemon will really
//     execute (after PATH lookup and symlinks).
//   - Keys pressed within [DefaultGuard] (500 ms) of a prompt appearing are
//     dropped, not queued: when the request on screen changes (another
//     console decided, it timed out, the client withdrew it), a key meant for
//     the old request or typed into the wrong window cannot decide the new
//     one. A hint shows while keys are disabled.
//   - Deny is the focused choice, so Enter alone never allows anything.
//     Allowing takes a deliberate key: a (allow once), s (allow for this
//     session) or moving the cursor. A key event that carries several
//     characters (typed faster than the terminal is read, or pasted) never
//     decides.
//   - A decision carries the hash of the request as the console received and
//     displayed it ([approval.Shown.Hash]); the daemon refuses a decision
//     whose hash differs from the waiting request's, so what is approved is
//     exactly what was shown.
//   - A console that runs inside tmux or screen shows a permanent warning:
//     an agent that can type into the multiplexer (send-keys, a shared
//     session) could approve its own requests. The multiplexer is found by
//     walking the console's process ancestry in /proc, not only from the
//     TMUX and STY variables, which a shell can unset.
//
// Quitting (q or Ctrl-C) never decides anything: the requests stay pending
// for other consoles or until they time out.
package console
