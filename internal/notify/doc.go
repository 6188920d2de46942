// Package notify runs the administrator's notifiers: programs that tell a
// human who is not looking at a console that a request waits for a
// decision (notify-send, curl to an ntfy topic, a chat CLI).
//
// # What a notifier is
//
// A notifier is an argument vector from the configuration (key notify): an
// absolute program path and its arguments, which may hold placeholders
// ({session}, {command}, ...; docs/config.md lists them) that are replaced by the
// waiting request's values. The daemon runs each configured notifier once
// for every request that starts waiting for a human; a request a rule or a
// session grant decides waits for nobody and notifies nobody.
//
// # Threat
//
// The values come from the agent: the session label, the host, the
// reason and the command are whatever it sent. A notifier must not let the
// agent choose what runs, nor put control characters on a screen (a
// notifier may well print to a terminal, or to a chat a human reads in
// one), nor make a notification so long that it hides what matters. So:
//
//   - There is no shell: the program is exec'd directly with its argument
//     vector. A placeholder is replaced inside the argument that holds it,
//     so a value is always part of exactly one argument however many
//     spaces, quotes or semicolons it has, and can never become an option
//     of its own unless a placeholder were where an
//     option goes. The program path (argv[0]) takes no placeholder.
//   - Nor can the administrator write it there: [Check] refuses a
//     placeholder that starts an argument, or sits in an argument that
//     starts with '-', '@' or '<', and, for curl, anywhere but in text that
//     curl sends as it is (see checkPlacement). So no value the agent
//     chooses can become an option or a file reference.
//   - Values are replaced once, never re-read: a session named "{command}"
//     puts the text {command} in the argument.
//   - Each value is escaped by package internal/termtext (EscapeStrict for
//     names, Escape for the reason, CommandLine for the pipeline), so it is
//     one line of printable text with no control character, and is cut to
//     [MaxValue] bytes at an escape's boundary, ending in "...". For
//     notify-send, whose body is markup, it is then markup-escaped.
//   - The program must be a regular executable file that only root can
//     change, and so must every directory on its path (the same check as for
//     a request's program, runner.Resolve): a program the agent could
//     rewrite would run the agent's code as notify_user.
//   - It runs as notify_user (default "nobody", never root), with its
//     supplementary groups, started by package spawn's policy: a session
//     of its own without a controlling terminal (it cannot reach the
//     terminal of agent-sudod --tty), descriptors 0-2 only (stdin from
//     /dev/null), "/" as working directory and HOME, and a clean
//     environment ([Env]): nothing of the daemon's environment or the
//     request's reaches it.
//
// # Never blocking, never deciding
//
// A notifier tells; it decides nothing. Notifiers run in goroutines of
// their own, after the request has been put to the consoles, and the
// request waits for a human exactly as it would without them: a notifier
// that hangs, fails or floods its output changes nothing about the
// request. Each run is bounded by notify_timeout, after which its whole
// process group is killed (SIGKILL). At most [MaxRunning] notifier
// processes run at once: a notifier that would exceed that is not started,
// and the log says so, so a flood of requests cannot fork a flood of
// processes. A failure (exit status, timeout, program that cannot start)
// is logged with the notifier's first [MaxOutput] bytes of output,
// escaped.
package notify
