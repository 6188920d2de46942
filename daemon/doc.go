// Package daemon is agent-sudod: it listens on the agent socket, identifies
// each peer from the kernel's credentials, reads one request, plans exactly
// what would run, has rules or a human decide, runs the pipeline and answers.
//
// # One request per connection
//
// Each connection carries one request line and one response line. The peer's
// credentials are read once, at accept; an unauthorised peer gets an error
// and nothing else happens. A request is refused before anyone is asked if
// it could not run (unknown program, refused environment variable, missing
// cwd), so a human is never asked to approve something that then fails.
//
// # How a request ends
//
// Every request ends at one point. The handler's body returns how it ends
// (an ending: the answer, the audit record that closes the request, which
// is a refusal or the result of an accepted request, and the log line), and
// only Server.finish writes them, in that order, with the context that
// outlives a shutdown by shutdown_timeout. A withdrawn request has no
// answer. A request that ends without a decision gets the decision of
// approval.Unanswered, which the broker also tells the consoles, so the
// audit log and the consoles say the same.
//
// # Client disconnects
//
// A client that hangs up while its request waits for approval withdraws it:
// it is never run. A client that hangs up while its command runs does not
// stop the command: the human approved the whole command, and killing a
// package manager half-way can leave the system broken. The result is still
// logged.
//
// # Stopping a running command
//
// Every command is listed with the approval broker while it runs
// (Options.Running), so that root consoles can watch it, read the end of
// its output (a runner.Live, which reads a copy beside the capture and so
// cannot change what the agent gets) and stop it. A stop cancels the
// command's own context, derived from the one shutdown cancels, with the
// console as the cause: the runner then does exactly what it does at
// command_timeout (SIGTERM, kill_grace, SIGKILL to the cgroup), and the
// daemon tells the agent and the audit log which console it was. There is
// no second way to kill a pipeline to keep in step with the first. The
// agent socket has no stop: only root, through the approver channel.
//
// # Connection limits
//
// Every connection holds a slot from accept until its answer is written.
// Non-root peers share max_connections slots, one user holding at most
// max_connections_per_user of them (waiting connections count too; a user
// is every uid it controls, peercred.Creds.Controller), so one
// user's idle or slow connections cannot take them all; root has
// root_connections slots of its own, so the administrator and `agent-sudo
// status` are never locked out by other users. A connection that finds no
// slot it may take waits for one in a single queue, in the order the
// daemon accepted them: a freed slot is handed to the oldest waiter that
// may take it (a slot of root's own only to root), so a new connection
// never takes a slot an older one waits for, and a waiter's wait is bounded
// by the queue ahead of it. (Waking every waiter to race for a freed slot,
// against new connections too, let an unlucky connection lose every race
// under load and be refused while newer ones were served.) A waiter is
// answered busy only when no slot has been handed to any waiter for a
// second (the daemon is not serving its queue, for example because every
// slot holds a request waiting for approval), and a new connection is
// answered busy at once when four times as many connections as there are
// slots already wait: a waiting connection costs a descriptor and a parked
// goroutine, not a buffer, and a queue that holds every agent of a busy
// host spares them the lottery of retrying. A connection that sends no
// byte within first_byte_timeout is closed, which ends the cheapest way to
// hold a slot; read_timeout bounds the whole line. Each non-root uid may
// open max_requests_per_minute connections a minute (a token bucket).
// Connections refused before they are read (busy, rate limited) and idle
// ones carry no request, so they are not audited; their log lines are
// limited to one per kind and uid every 10 seconds, counting the rest, so
// that a flood of refusals cannot flood the log or fill the disk.
//
// What a refused request writes is bounded too: the audit record keeps its
// size, SHA-256 and, for a long line, a prefix instead of its pipeline, and
// the reason is cut (see audit.Refusal); the log line is cut likewise.
//
// # Reloading
//
// SIGHUP reloads the configuration (Server.Reload); with a console on the
// daemon's terminal (agent-sudod --tty) it means that terminal hung up, and
// stops the daemon (ErrTerminalHungUp). Everything a request is
// decided and run under (the configuration, the rule engine, the
// environment policy, the access lists) is one immutable policy behind an
// atomic pointer: a reload builds a whole new policy, or nothing if any part
// fails, and swaps it in; each request takes the pointer once, when it is
// accepted, so it keeps one consistent policy to its end. What was built
// from the configuration at start and cannot be swapped under running
// requests (the sockets, the audit log, the connection limits, the way
// commands run) is tagged `reload:"restart"` in config.Config: a reload keeps those values and
// logs that they need a restart. The approval broker, and with it the
// session grants and the consoles, is not replaced. The replay cache is kept
// too, and refuses requests dated at or before any id it has forgotten, so a
// reload that widens the freshness check cannot make a forgotten id usable
// again (replayCache).
//
// # Shutdown
//
// On cancellation (SIGTERM) the daemon stops accepting, ends waiting
// requests with an error (they never run), lets running commands finish for
// up to shutdown_timeout before killing them, answers every connection,
// writes its stop, with the reason, to the audit log (a daemon record; its
// start was one too), and exits.
package daemon
