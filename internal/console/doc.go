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
//     "by" and "error" texts) passes through package internal/termtext before
//     it reaches the screen, so control sequences, bidirectional overrides
//     and invisible characters are shown as escapes (\x1b, \u202e) instead
//     of acting on the terminal. When anything had to be escaped the request
//     carries a prominent notice. Characters whose width the terminal and
//     the console's libraries disagree on are escaped too where the text
//     must be read exactly (the command line, stages, directory,
//     environment, names), so that what is shown is laid out as it is
//     drawn. Long values are wrapped, never cut, and continuation lines are
//     marked in a column the request cannot write to.
//   - Every line is measured with termtext.Width, the console's one width
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
//     session) or moving the cursor. A session grant outlives the request
//     by hours, so it takes a second key that differs from the first: s
//     asks, with a fresh guard, and only y confirms (confirm.go).
//   - The first screen of a request holds, at 80×24 with the multiplexer
//     warning and three notices, everything needed to judge it: the
//     command and each stage's program, who it runs as, why the rules ask,
//     who asked, the first lines of the reason, the directory, the
//     environment's names, the session and the time left. Notices take one
//     line each there and the prompt one line, so that the request is not
//     pushed off the screen by what agents cause; every detail (values,
//     host, id, times, the whole reason) is one key (v) away, and the
//     decision binds the whole request either way.
//   - Only a key that arrives alone acts (see Keystrokes below), so pasted
//     text and keys typed ahead or into the wrong window never decide.
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
// # Keystrokes
//
// A terminal delivers pasted text, and keys typed faster than the console
// reads them, as one burst of bytes; bubbletea v1 turns a burst into
// several key events, cut at each space and control character, so that
// "hello a" arrives as "hello", " " and "a", and "a" alone looks like a
// keystroke. Terminals and multiplexers without bracketed paste (tmux
// paste-buffer without -p, for one) do not mark a paste at all. The console
// therefore judges keys by time, not by how they were split:
//
//   - A key that acts (a decision, or anything else that does more than
//     move a cursor or scroll: every key at the decision prompt, q, g, i, r, x,
//     w, o, y, Delete, Enter, Esc) counts only when nothing else arrived within
//     [QuietWindow] (150 ms) before it and nothing arrives within
//     QuietWindow after it. It is held for that window (a bubbletea timer
//     message, never a sleep) and cancelled by any input meanwhile; a key,
//     a paste, an Alt key, a mouse or focus report, or a sequence bubbletea
//     cannot parse all count as input. A human pressing one key waits
//     150 ms for it to act; a paste never acts, however it is chunked.
//   - Key events get their times on bubbletea's event loop, which renders
//     the screen between events. A request that is slow to render could
//     spread the events of one burst more than the window apart, so Run
//     also logs the time and size of every read from the terminal
//     (readLog), and a held key acts only if the reads confirm it: one read
//     of exactly that key's bytes, no other read within the window before
//     it or up to the moment it acts.
//   - Scrolling and moving the grants list's cursor act at once and never
//     decide. Moving the decision prompt's cursor acts at once only when
//     the key came alone, and any burst puts the cursor back on Deny, so a
//     paste cannot leave Allow focused for the next Enter.
//   - A burst is reported on screen ("input discarded: N keys arrived
//     together"), so that the human knows to press the key again. Another
//     burst discarded while that notice shows replaces it with a count
//     ("input discarded (2×): "): without one, a press discarded again
//     would leave the screen as it was, and look like no press at all.
//   - A held key belongs to the screen it was pressed on: when the request
//     on screen changes (decided elsewhere, changed, timed out, or replaced
//     by the next one after this console's decision) it is forgotten, and
//     the new request starts with a fresh [DefaultGuard].
//
// Ctrl-C is the one key that acts at once: it quits, which decides nothing.
//
// Quitting (q or Ctrl-C) never decides anything: the requests stay pending
// for other consoles or until they time out. On agent-sudod's own terminal
// (Options.StopsDaemon) quitting stops the daemon, which ends the waiting
// requests unrun: the keys say so, and with requests waiting q and Ctrl-C
// ask first (y, or Ctrl-C again).
//
// # Several daemons
//
// [RunDaemons] serves several daemons from one console (agent-sudo approve
// with several --approver-socket and --ssh flags). Each daemon has a link
// (link.go): its connection, redialled with a growing delay when it
// breaks. The link numbers its connections (epochs); every line it reads
// reaches the model tagged with the daemon and the epoch, and a request
// remembers both. A decision names them too, and the link writes it only
// on that connection: after a reconnection, whether the daemon restarted
// (a new instance in its greeting) or only the transport broke, nothing
// decided on the old screen can reach the new connection. So that nothing
// undecidable stays on screen, a broken connection's requests, grants and
// unanswered decisions are dropped at once (daemons.go); the daemon's next
// greeting lists again what still waits. A request is shown with the host
// name its daemon sent in the greeting and the human's own name for the
// connection, never with the agent's claimed host alone, since an agent on
// another machine (ssh -R forwarding) claims what it likes.
//
// # Structure
//
// The model (model.go) holds what outlives any one screen: the queue of
// waiting requests, the grants, the notices, the decisions and revocations
// in flight, the key guard and the keyboard's timing, and the scroll
// position of the body. What the keyboard talks to is one component at a
// time, each with its own state, Update and View, in the shape of
// soft-serve's common.Component: the decision prompt (decide.go; also the
// idle screen), the note that goes with a denial (note.go), the session
// grants (grants.go), the running commands (running.go: a stop waits
// for a second, different key, and a command's output is escaped like
// stdin), the full stdin of a request (stdinview.go) and the confirmation
// of a session grant or of stopping the daemon (confirm.go). A new
// prompt is a new component, so its cursor starts on Deny and nothing of
// the previous one's state survives. Keys reach a component only through
// the key guard (keyguard.go), which asks the component what a key would do
// there and holds, drops or passes it accordingly; no component sees a key
// the guard has not passed.
package console
