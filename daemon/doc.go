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
// # Client disconnects
//
// A client that hangs up while its request waits for approval withdraws it:
// it is never run. A client that hangs up while its command runs does not
// stop the command: the human approved the whole command, and killing a
// package manager half-way can leave the system broken. The result is still
// logged.
//
// # Shutdown
//
// On cancellation (SIGTERM) the daemon stops accepting, ends waiting
// requests with an error (they never run), lets running commands finish for
// up to shutdown_timeout before killing them, answers every connection, and
// exits.
package daemon
