// Package notify runs the administrator's notifiers: programs that tell a
// human who is not looking at a console that a request waits for a
// decision (notify-send, curl to an ntfy topic, a chat CLI).
//
// A notifier is an argument vector from the configuration (key notify):
// an absolute program path, then arguments that may hold placeholders
// ({session}, {command}, ...) for the waiting request's values. [Check]
// refuses an unknown placeholder and one where a value could be read as an
// option or a file reference; [Prepare] refuses a program someone other
// than root can change, or a notify_user that does not exist, and returns
// the [Set] to run.
//
// What it promises: no shell runs; a placeholder is replaced once, inside
// its argument, by the value escaped to one line of printable text (package
// internal/termtext; markup-escaped too for notify-send) and cut to
// [MaxValue] bytes; the program runs as notify_user, never root, through
// package spawn's policy, with the environment [Env] and nothing of the
// daemon's or the request's; a [Runner] never blocks its caller nor
// decides anything: each run is killed with its process group at
// notify_timeout, at most [MaxRunning] run at once (one more is not
// started, and logged), and a failure is logged with the first [MaxOutput]
// bytes of output, escaped.
//
// docs/config.md ("Notifiers") explains each rule to the administrator,
// and docs/security.md ("Notifiers") why, with the tests that prove them.
package notify
