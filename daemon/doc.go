// Package daemon is agent-sudod: it listens on the agent socket, identifies
// each peer from the kernel's credentials, reads one request, plans exactly
// what would run, has rules or a human decide, runs the pipeline and answers.
//
// [Run] is the whole daemon as cmd/agent-sudod runs it: it listens on both
// sockets (or takes systemd's), serves until ctx ends or a signal stops it,
// and records its start and stop in the audit log. [New] and [Server.Serve] serve one listener;
// [CheckConfig] checks a configuration without starting anything. Every
// connection carries one request and gets one answer; every request is
// audited and ends at one point, which writes its log line, its last
// audit record and its answer in that order. A client that hangs up while
// its request waits withdraws it; one that hangs up while its command
// runs does not stop it. SIGHUP reloads the configuration; cancelling ctx
// ends waiting requests unrun, gives running commands shutdown_timeout and
// answers every connection before Run returns.
//
// # Stability
//
// This package is for this module's binaries only: it is not public Go API.
// Its API (New, Server, Run, CheckConfig, Options, Version, NewLogger,
// OpenLogFile and the two stop errors) is what cmd/agent-sudod uses, and
// changes with the daemon: its signatures use types from this module's
// internal packages (config.Config, audit.Log, runner.Spec), which no
// other module can name. Keeping internal/config internal keeps the
// configuration's checks in one place, behind the configuration file
// (docs/config.md); another program runs the daemon as its binary with
// such a file. test/outside: TestPublicAPINamesNoInternalType checks that
// the public packages (proto, client, approval) need no internal type.
//
// What is stable is the behaviour this package serves, as the documents
// specify it: the agent protocol (docs/protocol.md, package proto), the
// approver channel (docs/approver-protocol.md, package approval), the
// configuration (docs/config.md) and the audit log (docs/audit.md).
//
// docs/daemon.md explains why the daemon serves requests as it does:
// connection limits, reloading, shutdown, and stopping a running command.
package daemon
