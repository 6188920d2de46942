// Package console is the human's side of the approver channel: a terminal
// user interface that shows each request waiting for approval and sends the
// human's decision to agent-sudod.
//
// "agent-sudo approve" runs it against the daemon's approver socket (or
// several, and through ssh: [RunDaemons], [DialCommand]), and, started by
// "agent-sudod --tty" on the daemon's own terminal, against that daemon's
// ([DialAndRun]); both end in [Run]'s loop with a connection and a
// terminal. The daemon does not link this package. The channel is read and written
// through [approval.Client] (docs/approver-protocol.md).
//
// What it promises: every string from the daemon passes through package
// internal/termtext before it reaches the screen, and a request that needed
// escapes carries a notice; every line is laid out with termtext.Width to
// one column less than the terminal; a request that does not hash to its
// announced hash is never shown nor decided on; Deny is the focused
// choice; keys within [DefaultGuard] of a prompt appearing are dropped,
// and a key that acts counts only when nothing else arrived within
// [QuietWindow] before or after it, so a paste or keys typed ahead never
// decide; a session grant and stopping a command take a second, different
// key; a decision carries the hash of the request as shown, and goes only
// over the connection that showed it; a broken connection's requests leave
// the screen at once; a console inside tmux or screen warns for good.
// Quitting never decides anything; with Options.StopsDaemon it stops the
// daemon, asking first when requests wait.
//
// docs/approving.md explains this to the human at the console,
// docs/remote.md the several daemons, docs/security.md lists the promises
// with their tests, and docs/development.md ("The console's structure")
// how the package is built.
package console
