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
// What it promises: every string from the daemon passes through package
// internal/termtext before it reaches the screen, and a request that needed
// escapes carries a notice; every line is laid out with termtext.Width to
// one column less than the terminal, so nothing is cut or wrapped by
// anyone else; Deny is the focused choice; keys within [DefaultGuard] of a
// prompt appearing are dropped, and a key that acts counts only when
// nothing else arrived within [QuietWindow] before or after it, as the
// terminal's reads confirm (readLog), so a paste or keys typed ahead never
// decide; a session grant and stopping a command take a second, different
// key; a decision carries the hash of the request as shown
// ([approval.Shown.Hash]); a console inside tmux or screen, found from its
// process ancestry, warns for good. Quitting never decides anything; on
// agent-sudod's own terminal (Options.StopsDaemon) it stops the daemon,
// asking first when requests wait. [RunDaemons] serves several daemons,
// each over a link (link.go) that redials a broken connection and numbers
// its connections: a decision is written only on the connection that
// showed its request, and a broken connection's requests leave the screen
// at once.
//
// docs/approving.md explains all of this to the human at the console,
// docs/remote.md the several daemons, and docs/security.md lists the
// promises with their tests.
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
