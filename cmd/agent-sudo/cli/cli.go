// Package cli is the agent-sudo command line, the side of agent-sudo that an
// agent runs. cmd/agent-sudo only calls [Main]; everything else is here so
// that tests and other binaries can run it in-process.
//
// # Output rules
//
//   - stdout carries only what was asked for: the command's output, the
//     response line with --json, or help that was asked for with "help" or
//     -h.
//   - A command's stderr is copied to stderr unchanged.
//   - Everything agent-sudo itself says goes to stderr as ONE line, prefixed
//     "agent-sudo: ", lower-case, saying what happened and what to do about
//     it. Text that came from the daemon is untrusted: every such line goes
//     through visible, which escapes control characters, before it is
//     printed.
//
// # Exit status
//
// A command's own exit status passes through. agent-sudo's own outcomes use
// the sysexits and timeout(1) conventions:
//
//	2    usage: a bad flag, flag value or pipeline; nothing was sent
//	69   agent-sudod cannot be reached (EX_UNAVAILABLE)
//	70   the daemon answered with an error, broke the protocol, or the
//	     request could not be sent or answered (EX_SOFTWARE)
//	74   writing the output failed (EX_IOERR)
//	75   status: the daemon is up but busy, or rate-limited you; mcp: the
//	     client closed stdin with calls in progress (EX_TEMPFAIL)
//	77   the request was denied (EX_NOPERM)
//	78   the configuration cannot be loaded (audit, rules: EX_CONFIG)
//	124  the request timed out in the daemon, or --timeout expired
//	130  interrupted
//
// These can collide with a command's own status; --json removes the
// ambiguity. Each subcommand's help lists the statuses it uses.
package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/hint"
)

// Exit statuses of agent-sudo's own outcomes; see the package documentation.
const (
	exitUsage       = 2
	exitUnavailable = 69
	exitSoftware    = 70
	exitIO          = 74
	exitTempFail    = 75
	exitDenied      = 77
	exitTimeout     = 124
	exitInterrupted = 130
)

// invocation is what one run of Main sees of its process. Commands read the
// environment only through getenv, so tests never touch the real one.
type invocation struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	// noticeDelay is how long run waits for an answer before its wait
	// notice; zero means waitNoticeDelay. Tests shorten it.
	noticeDelay time.Duration
	// stdinWait is how long run waits for a pipe on stdin to show data or
	// its end; zero means stdinWait (the constant). Tests shorten it.
	stdinWait time.Duration
	// withTimeout gives run's --timeout its context; nil means
	// context.WithTimeout. Tests end the wait when they choose, on a
	// clock of their own, instead of after a real duration.
	withTimeout func(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// say writes one diagnostic line to stderr, with the program prefix and with
// anything that could control the terminal escaped; then, for each error
// among args that carries advice (package hint), its hints, one line each
// ("agent-sudo: hint: ..."), escaped the same way.
func (inv *invocation) say(format string, args ...any) {
	fmt.Fprintf(inv.stderr, "agent-sudo: %s\n", visible(fmt.Sprintf(format, args...)))
	for _, a := range args {
		if err, ok := a.(error); ok {
			for _, h := range hint.Of(err) {
				fmt.Fprintf(inv.stderr, "agent-sudo: hint: %s\n", visible(h))
			}
		}
	}
}

// failHint says what went wrong, then on a line of its own what to do
// about it ("agent-sudo: hint: ..."), and returns code.
func (inv *invocation) failHint(code int, advice, format string, args ...any) int {
	inv.say(format, args...)
	fmt.Fprintf(inv.stderr, "agent-sudo: hint: %s\n", visible(advice))
	return code
}

// fail says what went wrong and returns code, so that a command can end
// with "return inv.fail(...)".
func (inv *invocation) fail(code int, format string, args ...any) int {
	inv.say(format, args...)
	return code
}

// command is one command, or one subcommand of a command.
type command struct {
	name    string
	summary string
	// run runs the command with the arguments after its name and returns
	// the exit status.
	run func(ctx context.Context, inv *invocation, args []string) int
	// help writes the command's full help to w.
	help func(inv *invocation, w io.Writer) error
	// subs are the command's subcommands, which run dispatches to (see
	// runSubcommand) and "agent-sudo help CMD SUB" describes.
	subs []command
	// hidden commands are left out of the list in "agent-sudo help"; they
	// are run by other programs, and "agent-sudo help CMD" still describes
	// them.
	hidden bool
}

// commands is the table of commands, in the order help lists them. It is a
// function rather than a variable so that "help" can list the table it
// belongs to and nothing global can be changed.
func commands() []command {
	return []command{
		{name: "run", summary: "ask agent-sudod to run a command or a pipeline", run: runMain, help: runHelp},
		{name: "status", summary: "tell whether agent-sudod is up and you may use it", run: statusMain, help: statusHelp},
		{name: "approve", summary: "as root, approve or deny the requests waiting for a human", run: approveMain, help: approveHelp, subs: []command{
			{name: "web", summary: "manage the passkeys of the web approver (approve --web)", run: approveWebVerb(""), help: approveWebHelp, subs: []command{
				{name: "enroll", summary: "enrol a passkey for an approver NAME, by a one-time link", run: approveWebVerb("enroll"), help: approveWebHelp},
				{name: "list", summary: "list the enrolled passkeys", run: approveWebVerb("list"), help: approveWebHelp},
				{name: "revoke", summary: "remove the passkey of an approver NAME", run: approveWebVerb("revoke"), help: approveWebHelp},
				{name: "serve", summary: "the web approver with its settings from /etc/agent-sudo/web.toml (agent-sudo-web.service)", run: approveWebVerb("serve"), help: approveWebHelp},
			}},
		}},
		{name: "approver-stdio", summary: "connect stdin and stdout to the approver socket (run by approve --ssh)", run: approverStdioMain, help: approverStdioHelp, hidden: true},
		{name: "audit", summary: "list and verify the audit log: what ran, who decided, what came out", run: auditMain, help: auditHelp, subs: []command{
			{name: "show", summary: "print every record of one request", run: auditShowMain, help: auditShowHelp},
			{name: "verify", summary: "check the audit log's hash chain", run: auditVerifyMain, help: auditVerifyHelp},
		}},
		{name: "mcp", summary: "serve agent-sudo to a coding agent as an MCP server on stdio", run: mcpMain, help: mcpHelp},
		{name: "rules", summary: "test what the rules of a configuration decide for a command, before deploying them", run: rulesMain, help: rulesTestHelp, subs: []command{
			{name: "test", summary: "decide a request with a configuration's rules and say how", run: rulesTestMain, help: rulesTestHelp},
		}},
		{name: "shim", summary: "install a sudo shim that sends sudo commands to agent-sudod", run: shimMain, help: shimHelp, subs: []command{
			{name: "install", summary: "make DIR/sudo a link to agent-sudo", run: shimInstallMain, help: shimHelp},
		}},
		{name: "version", summary: "print agent-sudo's version", run: versionMain, help: versionHelp},
		{name: "help", summary: "show help for agent-sudo or one of its commands", run: helpMain, help: helpHelp},
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// Main runs the agent-sudo command line and returns its exit status. args
// excludes the program name (os.Args[1:]). The environment is read only
// through getenv. Cancelling ctx abandons whatever is in progress, with
// status 130.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	inv := &invocation{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	return inv.main(ctx, args)
}

// main runs the command args name, as Main does, with inv's streams,
// environment and delays.
func (inv *invocation) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		return inv.fail(exitUsage, "no command given; run 'agent-sudo help' for usage")
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		name = "help"
	case "-version", "--version":
		name = "version"
	}
	cmd, ok := lookup(name)
	if !ok {
		return inv.fail(exitUsage, "unknown command %q; run 'agent-sudo help' for the list of commands", name)
	}
	return cmd.run(ctx, inv, args[1:])
}

func helpUsage() *usage {
	return &usage{
		name:     "help",
		synopsis: []string{"agent-sudo help [COMMAND [SUBCOMMAND...]]"},
		text:     "Shows agent-sudo's commands, or the help of one command or subcommand (e.g. agent-sudo help approve web enroll).\n",
		args:     true,
		exits: []exitDoc{
			{"0", "the help was shown"},
			{"2", "no such command or subcommand"},
			{"74", "writing the help failed"},
		},
	}
}

func helpHelp(_ *invocation, w io.Writer) error {
	u := helpUsage()
	return u.write(w, u.newFlagSet())
}

// helpMain is "agent-sudo help [command [subcommand...]]": it follows the
// path through the command table, each word a subcommand of the one
// before, and shows the help of the last.
func helpMain(_ context.Context, inv *invocation, args []string) int {
	u := helpUsage()
	args, code, ok := inv.parse(u, u.newFlagSet(), args)
	if !ok {
		return code
	}
	if len(args) == 0 {
		return inv.showHelp(mainHelp)
	}
	cmd, ok := lookup(args[0])
	if !ok {
		return inv.fail(exitUsage, "help: unknown command %q; run 'agent-sudo help' for the list of commands", args[0])
	}
	path := cmd.name
	for _, word := range args[1:] {
		if len(cmd.subs) == 0 {
			return inv.fail(exitUsage, "help: %s has no subcommands; see 'agent-sudo help %s'", path, path)
		}
		sub, ok := cmd.sub(word)
		if !ok {
			return inv.fail(exitUsage, "help: %s has no subcommand %q; see 'agent-sudo help %s'", path, word, path)
		}
		cmd, path = sub, path+" "+sub.name
	}
	return inv.showHelp(cmd.help)
}

// sub returns the subcommand of c named name.
func (c command) sub(name string) (command, bool) {
	for _, s := range c.subs {
		if s.name == name {
			return s, true
		}
	}
	return command{}, false
}

// showHelp writes help that was asked for to stdout and returns the exit
// status.
func (inv *invocation) showHelp(help func(*invocation, io.Writer) error) int {
	if err := help(inv, inv.stdout); err != nil {
		return inv.fail(exitIO, "write help: %v", err)
	}
	return 0
}

func mainHelp(_ *invocation, w io.Writer) error {
	var b strings.Builder
	b.WriteString(`agent-sudo asks agent-sudod, the agent-sudo daemon, to run commands as root
once a human has approved them.

usage: agent-sudo <command> [arguments]

commands:
`)
	for _, c := range commands() {
		if c.hidden {
			continue
		}
		listCommand(&b, c, 1)
	}
	b.WriteString("\n'agent-sudo help <command> [<subcommand>...]' shows its flags and exit statuses.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// listCommand writes c's line of the main help, indented two spaces a
// level, then its subcommands' lines one level deeper.
func listCommand(b *strings.Builder, c command, level int) {
	fmt.Fprintf(b, "%s%-8s %s\n", strings.Repeat("  ", level), c.name, c.summary)
	for _, sub := range c.subs {
		listCommand(b, sub, level+1)
	}
}
