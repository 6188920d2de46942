package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/mcpserver"
	"github.com/agent-sudo/agent-sudo/proto"
)

// mcpOptions are mcp's flags.
type mcpOptions struct {
	socket, session, host string
	maxOutput             int
	progressInterval      time.Duration
}

// mcpFlags returns a fresh flag set for mcp, with defaults taken from the
// invocation's environment.
func mcpFlags(inv *invocation) (*flag.FlagSet, *mcpOptions) {
	o := &mcpOptions{}
	fset := mcpUsage().newFlagSet()
	socket := inv.getenv(envSocket)
	if socket == "" {
		socket = client.DefaultSocket
	}
	fset.StringVar(&o.socket, "socket", socket, "`path` of agent-sudod's socket (env "+envSocket+")")
	fset.StringVar(&o.session, "session", inv.getenv(envSession), "session `name`, shown to the approver and logged (env "+envSession+"; default: the parent process's name and the working directory's, e.g. claude-myproject)")
	fset.StringVar(&o.host, "host", "", "host `name`, shown to the approver and logged (default: this machine's host name)")
	fset.IntVar(&o.maxOutput, "max-output", mcpserver.DefaultMaxOutput, "show the model at most `bytes` of stdout and of each stderr; the rest is marked as truncated")
	fset.DurationVar(&o.progressInterval, "progress-interval", mcpserver.DefaultProgressInterval, "time between progress notifications while an answer is awaited, for clients that ask for them")
	return fset, o
}

func mcpUsage() *usage {
	return &usage{
		name:     "mcp",
		synopsis: []string{"agent-sudo mcp [flags]"},
		text: `Serve agent-sudo to a coding agent as a Model Context Protocol (MCP) server
on stdin and stdout. The agent's MCP client starts this command; it is not
meant to be run by hand. See docs/agents.md for each agent's configuration.

The server offers one tool, "execute": the model gives a command as an argv
array ("argv") or a pipeline of argv arrays ("pipeline"), and a "reason" that
the approving human reads. The tool sends the request to agent-sudod, waits
for the answer (sending progress notifications meanwhile, if the client asked
for them) and returns the status, the exit codes and the output as text. If
the client cancels the call, the request is withdrawn unless it already ran.

Diagnostics go to stderr; stdout carries only the protocol.
`,
		exits: []exitDoc{
			{"0", "the client closed the connection"},
			{"2", "usage error: a bad flag or flag value"},
			{"70", "the server failed"},
			{"75", "the client closed stdin while calls were in progress: each was answered as cancelled, and requests still waiting for approval were withdrawn"},
			{"130", "interrupted"},
		},
	}
}

func mcpHelp(inv *invocation, w io.Writer) error {
	fset, _ := mcpFlags(inv)
	return mcpUsage().write(w, fset)
}

// mcpMain is "agent-sudo mcp".
func mcpMain(ctx context.Context, inv *invocation, args []string) int {
	fset, o := mcpFlags(inv)
	if _, code, ok := inv.parse(mcpUsage(), fset, args); !ok {
		return code
	}
	switch {
	case o.maxOutput <= 0:
		return inv.fail(exitUsage, "mcp: --max-output %d must be greater than zero", o.maxOutput)
	case o.progressInterval <= 0:
		return inv.fail(exitUsage, "mcp: --progress-interval %v must be greater than zero", o.progressInterval)
	case len(o.session) > proto.MaxSessionLen:
		return inv.fail(exitUsage, "mcp: --session is %d bytes; at most %d are allowed", len(o.session), proto.MaxSessionLen)
	}
	if o.session == "" {
		o.session = defaultSession(parentProcessName(), workingDir())
	}
	if !flagSet(fset, "host") {
		var err error
		if o.host, err = os.Hostname(); err != nil {
			return inv.fail(exitSoftware, "mcp: read this machine's host name: %v; pass --host", err)
		}
	}
	cfg := mcpserver.Config{
		Socket:           o.socket,
		Session:          o.session,
		Host:             o.host,
		MaxOutput:        o.maxOutput,
		ProgressInterval: o.progressInterval,
		Version:          Version(),
	}
	err := mcpserver.Serve(ctx, cfg, inv.stdin, inv.stdout)
	var cut *mcpserver.CutOffError
	switch {
	case ctx.Err() != nil:
		return inv.fail(exitInterrupted, "mcp: interrupted; requests still waiting for approval were withdrawn")
	case errors.As(err, &cut):
		return inv.fail(exitTempFail, "mcp: %v", err)
	case err != nil:
		return inv.fail(exitSoftware, "mcp: %v", err)
	}
	return 0
}

// defaultSession derives a session name from the name of the process that
// started agent-sudo (the agent, such as "claude" or "codex") and the base
// name of the working directory (the project): "claude-myproject". Either
// part may be missing; with neither the name is "mcp".
func defaultSession(parent, cwd string) string {
	var parts []string
	for _, s := range []string{parent, filepath.Base(cwd)} {
		if w := sessionWord(s); w != "" {
			parts = append(parts, w)
		}
	}
	if len(parts) == 0 {
		return "mcp"
	}
	return strings.Join(parts, "-")
}

// sessionWord reduces s to a short, lower-case word of letters, digits, '.',
// '_' and '-', so that a session name is readable and safe in rule patterns
// and on the approver's screen.
func sessionWord(s string) string {
	const maxLen = 64
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
		if b.Len() >= maxLen {
			break
		}
	}
	return strings.Trim(b.String(), ".")
}

// parentProcessName returns the command name of the parent process, or ""
// when it cannot be read.
func parentProcessName() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", os.Getppid()))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// workingDir returns the working directory, or "" when it cannot be read.
func workingDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	return dir
}
