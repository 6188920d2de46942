package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	"github.com/agent-sudo/agent-sudo/proto"
	"github.com/google/uuid"
	"golang.org/x/sys/unix"
)

// Environment variables that set defaults for run's flags.
const (
	envSocket  = "AGENT_SUDO_SOCKET"
	envSession = "AGENT_SUDO_SESSION"
)

// runOptions are run's flags.
type runOptions struct {
	socket, session, host, reason, cwd string
	stdin                              string
	env                                envFlag
	unprivileged, forwardAgent         bool
	noStdin                            bool
	nonInteractive                     bool
	pipefail, json                     bool
	timeout                            time.Duration
}

// runFlags returns a fresh flag set for run, with defaults taken from the
// invocation's environment.
func runFlags(inv *invocation) (*flag.FlagSet, *runOptions) {
	o := &runOptions{env: envFlag{}}
	fset := runUsage().newFlagSet()
	socket := inv.getenv(envSocket)
	if socket == "" {
		socket = client.DefaultSocket
	}
	fset.StringVar(&o.socket, "socket", socket, "`path` of agent-sudod's socket (env "+envSocket+")")
	fset.StringVar(&o.session, "session", inv.getenv(envSession), "session `name`, shown to the approver and logged (env "+envSession+")")
	fset.StringVar(&o.host, "host", "", "host `name`, shown to the approver and logged (default: this machine's host name)")
	fset.StringVar(&o.reason, "reason", "", "`text` saying why the command should run, shown to the approver")
	fset.Var(&o.env, "env", "set `NAME=VALUE` in the command's environment; repeatable")
	fset.BoolVar(&o.unprivileged, "unprivileged", false, "run the command without root privileges")
	fset.BoolVar(&o.forwardAgent, "forward-agent", false, "give the command the approver's SSH agent; needs --unprivileged")
	fset.StringVar(&o.cwd, "cwd", "", "working `directory` of the command, an absolute path (default: /; an argument that is a relative path, ./f, is refused without it)")
	fset.StringVar(&o.stdin, "stdin", "", "feed the first stage this `file`'s content, or agent-sudo's stdin with '-' (default: stdin when it is not a terminal)")
	fset.BoolVar(&o.noStdin, "no-stdin", false, "never forward stdin: the first stage reads /dev/null")
	fset.BoolVar(&o.pipefail, "pipefail", false, "exit with the status of the first stage that failed, not the last stage's")
	fset.BoolVar(&o.nonInteractive, "non-interactive", false, "do not wait when no approver console or web approver is connected: a request no rule allows is then denied at once")
	fset.BoolVar(&o.json, "json", false, "print the daemon's response line instead of the output; the exit status is the same")
	fset.DurationVar(&o.timeout, "timeout", 0, "give up waiting for an answer after `duration`, e.g. 10m (default: wait as long as the daemon takes)")
	return fset, o
}

func runUsage() *usage {
	return &usage{
		name:     "run",
		synopsis: []string{"agent-sudo run [flags] [--] CMD [ARG...] ['|' CMD [ARG...]]..."},
		text: `Ask agent-sudod to run a command, or a pipeline of commands, once a human has
approved it. It runs as root unless --unprivileged is given.

A standalone '|' argument separates the stages of a pipeline; quote it so that
the shell passes it on:

    agent-sudo run --reason 'is nginx installed?' -- dpkg -l '|' grep nginx

Use -- before the command: every argument after it belongs to the command.
An argument that is exactly '|' always separates stages.

stdin: when agent-sudo's stdin is not a terminal, it is read to its end and
sent with the request (at most 737280 bytes; more is refused, never cut), the
human sees it before deciding, and the first stage reads it:

    echo 'nameserver 192.0.2.53' | agent-sudo run -- tee /etc/resolv.conf

--stdin FILE sends a file's content instead, --no-stdin sends nothing. On a
terminal nothing is read unless --stdin - says so.

The last stage's stdout is copied to stdout and every stage's stderr to
stderr, unchanged and in stage order. agent-sudo exits with the last stage's
status, or with --pipefail the status of the first stage that failed (bash
reports the last one that failed).
`,
		exits: []exitDoc{
			{"0-255", "the command's own exit status, when it ran"},
			{"2", "usage error: a bad flag or flag value (--env, --cwd, --timeout, ...)\nor an empty stage; nothing was sent"},
			{"69", "agent-sudod cannot be reached; nothing was sent"},
			{"70", "agent-sudod answered with an error or broke the protocol, or the\nrequest could not be sent or answered"},
			{"74", "the output could not be written"},
			{"77", "the request was denied, or your user may not use agent-sudod"},
			{"124", "the request timed out in the daemon, or --timeout expired"},
			{"130", "interrupted"},
		},
		exitNote: "These may collide with the command's own status; --json tells them apart.\n",
		args:     true,
	}
}

func runHelp(inv *invocation, w io.Writer) error {
	fset, _ := runFlags(inv)
	return runUsage().write(w, fset)
}

// runMain is "agent-sudo run".
func runMain(ctx context.Context, inv *invocation, args []string) int {
	return runAs(ctx, inv, args, false)
}

// runShim is "agent-sudo run" for the sudo shim: a request denied because
// no approver could answer it (--non-interactive, sudo -n) is reported as
// sudo reports "a password is required", with sudo's exit status 1.
func runShim(ctx context.Context, inv *invocation, args []string) int {
	return runAs(ctx, inv, args, true)
}

// exitSudoNoPassword is what sudo -n exits with when it would need a
// password.
const exitSudoNoPassword = 1

func runAs(ctx context.Context, inv *invocation, args []string, shim bool) int {
	fset, o := runFlags(inv)
	args, code, ok := inv.parse(runUsage(), fset, args)
	if !ok {
		return code
	}
	pipeline, err := splitStages(args)
	if err != nil {
		return inv.fail(exitUsage, "run: %v; see 'agent-sudo help run'", err)
	}
	switch {
	case o.forwardAgent && !o.unprivileged:
		return inv.fail(exitUsage, "run: --forward-agent needs --unprivileged: the SSH agent is never given to privileged commands")
	case o.cwd != "" && !filepath.IsAbs(o.cwd):
		return inv.fail(exitUsage, "run: --cwd %q is not an absolute path", o.cwd)
	case o.timeout < 0:
		return inv.fail(exitUsage, "run: --timeout %v is negative", o.timeout)
	}
	if stage, arg, rel := client.RelativeArg(pipeline); rel && o.cwd == "" {
		return inv.fail(exitUsage, "run: %q (stage %d) is a relative path, and without --cwd the command runs in /, not here "+
			"(run does not send this directory: the daemon may be on another machine or outside this container); "+
			"give --cwd \"$PWD\" or an absolute path; nothing was sent", arg, stage+1)
	}
	if o.noStdin && o.stdin != "" {
		return inv.fail(exitUsage, "run: --stdin and --no-stdin contradict each other; give one")
	}
	if !flagSet(fset, "host") {
		if o.host, err = os.Hostname(); err != nil {
			return inv.fail(exitSoftware, "read this machine's host name: %v; pass --host", err)
		}
	}
	var input []byte
	if !o.noStdin {
		if input, err = inv.readInput(o.stdin); err != nil {
			return inv.fail(exitUsage, "run: %v; nothing was sent", err)
		}
	}

	req := &proto.Request{
		// Chosen here rather than by the client so that every message can
		// name the request, even when no answer came.
		ID:           uuid.NewString(),
		Host:         o.host,
		Session:      o.session,
		Pipeline:     pipeline,
		Env:          o.env,
		Reason:       o.reason,
		Privileged:   !o.unprivileged,
		ForwardAgent: o.forwardAgent,
		Cwd:          o.cwd,
		Stdin:        input,
		// Progress is set by the client.
		NonInteractive: o.nonInteractive,
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		withTimeout := inv.withTimeout
		if withTimeout == nil {
			withTimeout = context.WithTimeout
		}
		ctx, cancel = withTimeout(ctx, o.timeout)
		defer cancel()
	}
	c := client.New(o.socket)
	c.Busy.OnRetry = func(busy *proto.Response, retry int, _ time.Duration) {
		if retry == 1 { // once: the wait notice covers the rest
			inv.say("agent-sudod is busy, nothing ran; retrying: %s", busy.Message)
		}
	}
	progress := newProgressState()
	c.Progress = progress.set
	var resp *proto.Response
	var raw []byte
	stopNotice := inv.waitNotice(req.ID, cmp.Or(inv.noticeDelay, waitNoticeDelay), progress)
	if o.json {
		resp, raw, err = c.RunRaw(ctx, req)
	} else {
		resp, err = c.Run(ctx, req)
	}
	stopNotice()
	if err != nil {
		return inv.runFailed(err, o, req.ID, progress.get())
	}

	code = exitStatus(resp, o.pipefail)
	if o.json {
		if _, err := inv.stdout.Write(raw); err != nil {
			return inv.fail(exitIO, "write the response to stdout: %v", err)
		}
		return code
	}
	if resp.Stages != nil {
		if err := inv.writeOutput(req, resp); err != nil {
			return inv.fail(exitIO, "%v", err)
		}
	}
	// The daemon's message is untrusted; say prints it through visible.
	switch resp.Status {
	case proto.StatusDenied:
		if shim && o.nonInteractive && strings.HasPrefix(resp.Message, proto.NoApproverPrefix) {
			fmt.Fprintf(inv.stderr, "sudo: a password is required (here: a human's approval), and %s\n", visible(resp.Message))
			return exitSudoNoPassword
		}
		inv.say("%s; change the request or ask the user before retrying", withMessage("request "+req.ID+" was denied", resp.Message))
	case proto.StatusTimeout:
		if resp.Stages == nil {
			inv.say("%s; retry when someone can approve it", withMessage("request "+req.ID+" timed out before it started", resp.Message))
		} else {
			inv.say("%s; its output is incomplete", withMessage("request "+req.ID+" timed out while running", resp.Message))
		}
	case proto.StatusError:
		// Not always the request's fault: a daemon stopping answers the
		// requests still waiting with an error too, and says so.
		inv.say("%s (the daemon's log may say more: journalctl -u agent-sudo)", withMessage("agent-sudod did not run request "+req.ID, resp.Message))
	}
	return code
}

// runFailed reports an exchange that produced no answer and returns the exit
// status for it. last is the daemon's last progress line, nil when none
// came: when run stopped waiting, it says what became of the request.
func (inv *invocation) runFailed(err error, o *runOptions, id string, last *proto.Progress) int {
	var reqErr *proto.RequestError
	switch {
	case errors.Is(err, client.ErrUnreachable):
		if errors.Is(err, syscall.EPERM) {
			// Not the socket's mode (that is EACCES): a sandbox or a
			// security module refused the connect itself.
			return inv.failHint(exitUnavailable, "run the agent where it may connect to "+o.socket,
				"%v; a sandbox or security policy (seccomp, Landlock, AppArmor, SELinux) refused the connection, not the socket's permissions", err)
		}
		if errors.Is(err, fs.ErrPermission) {
			return inv.fail(exitUnavailable, "%v; check that your user may open the socket (ls -l %s)", err, o.socket)
		}
		if client.DaemonDown(err) {
			return inv.failHint(exitUnavailable, notRunning, "agent-sudod is not running: %v", err)
		}
		return inv.fail(exitUnavailable, "%v; is the daemon running? (systemctl status agent-sudo)", err)
	case errors.Is(err, client.ErrNoAnswer):
		return inv.failHint(exitUnavailable, notRunning, "agent-sudod is not running: the connection to %s was reset before it answered request %s", o.socket, id)
	case errors.Is(err, context.DeadlineExceeded):
		limit := "before the deadline"
		if o.timeout > 0 {
			limit = fmt.Sprintf("within --timeout %v", o.timeout)
		}
		return inv.fail(exitTimeout, "no answer to request %s %s: %s (agent-sudo audit show %s has its records)", id, limit, proto.Abandoned(last), id)
	case errors.Is(err, context.Canceled):
		return inv.fail(exitInterrupted, "interrupted while waiting for agent-sudod to answer request %s: %s (agent-sudo audit show %s has its records)", id, proto.Abandoned(last), id)
	case errors.Is(err, proto.ErrProtocol):
		return inv.fail(exitSoftware, "bad answer from agent-sudod at %s: %v; check that --socket names an agent-sudo daemon of this version, or report a daemon bug", o.socket, err)
	case errors.As(err, &reqErr):
		return inv.fail(exitSoftware, "%v; nothing was sent", err)
	}
	return inv.fail(exitSoftware, "lost the connection to agent-sudod at %s: %v; check the daemon (systemctl status agent-sudo)", o.socket, err)
}

// writeOutput copies the command's output, then notes any truncation.
func (inv *invocation) writeOutput(req *proto.Request, resp *proto.Response) error {
	if _, err := inv.stdout.Write(resp.Stdout); err != nil {
		return fmt.Errorf("write the command's stdout: %w", err)
	}
	for i, st := range resp.Stages {
		if _, err := inv.stderr.Write(st.Stderr); err != nil {
			return fmt.Errorf("write the stderr of stage %d: %w", i+1, err)
		}
	}
	const limit = proto.MaxOutputBytes >> 20
	if resp.StdoutTruncated {
		inv.say("stdout was truncated at %d MiB by the daemon", limit)
	}
	for i, st := range resp.Stages {
		if st.StderrTruncated {
			inv.say("stderr of stage %d (%s) was truncated at %d MiB by the daemon", i+1, req.Pipeline[i][0], limit)
		}
	}
	return nil
}

// exitStatus maps an answer to agent-sudo's exit status. The client has
// checked that an ok answer has one stage per pipeline stage, and the
// pipeline is never empty.
func exitStatus(resp *proto.Response, pipefail bool) int {
	switch resp.Status {
	case proto.StatusDenied:
		return exitDenied
	case proto.StatusTimeout:
		return exitTimeout
	case proto.StatusError:
		if strings.HasPrefix(resp.Message, proto.NotAllowedPrefix) {
			return exitDenied // as agent-sudo status says it
		}
		return exitSoftware
	}
	if len(resp.Stages) == 0 {
		return exitSoftware // unreachable: the client refuses such answers
	}
	if pipefail {
		for _, st := range resp.Stages {
			if st.ExitCode != 0 {
				return st.ExitCode
			}
		}
		return 0
	}
	return resp.Stages[len(resp.Stages)-1].ExitCode
}

// withMessage appends the daemon's message to what happened, if it sent one.
func withMessage(what, msg string) string {
	if msg == "" {
		return what
	}
	return what + ": " + msg
}

// splitStages splits a command line at each standalone '|' argument.
func splitStages(args []string) ([][]string, error) {
	if len(args) == 0 {
		return nil, errors.New("no command given")
	}
	var stages [][]string
	start := 0
	for i := 0; i <= len(args); i++ {
		if i < len(args) && args[i] != "|" {
			continue
		}
		if i == start {
			switch {
			case i == 0:
				return nil, errors.New("the pipeline starts with '|': put a command before it")
			case i == len(args):
				return nil, errors.New("the pipeline ends with '|': put a command after it")
			}
			return nil, fmt.Errorf("stage %d is empty: two '|' in a row", len(stages)+1)
		}
		stages = append(stages, args[start:i:i])
		start = i + 1
	}
	return stages, nil
}

// flagSet reports whether the flag called name was given on the command line.
func flagSet(fset *flag.FlagSet, name string) bool {
	found := false
	fset.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// envFlag collects --env NAME=VALUE flags.
type envFlag map[string]string

// String lists the variables, for the flag package.
func (e envFlag) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(e)) {
		parts = append(parts, k+"="+e[k])
	}
	return strings.Join(parts, " ")
}

// Set adds one NAME=VALUE. A name given twice is refused rather than
// silently overridden.
func (e envFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return errors.New("want NAME=VALUE")
	case !proto.ValidEnvName(name):
		return fmt.Errorf("%q is not a valid variable name: names match [A-Za-z_][A-Za-z0-9_]*", name)
	}
	if _, dup := e[name]; dup {
		return fmt.Errorf("%s is already set; give each variable once", name)
	}
	e[name] = value
	return nil
}

// waitNoticeDelay is how long run waits for an answer before it tells the
// user it is still waiting: long enough that rule-allowed commands stay
// silent, short enough that nobody wonders whether it hung.
const waitNoticeDelay = time.Second

// progressState is what the daemon last said of a request it has not
// answered yet (its progress lines), for the wait notice and for what run
// says when it stops waiting.
type progressState struct {
	mu      sync.Mutex
	last    *proto.Progress
	changed chan struct{} // one wake-up per change
}

func newProgressState() *progressState {
	return &progressState{changed: make(chan struct{}, 1)}
}

// set is the client's Progress callback.
func (s *progressState) set(p proto.Progress) {
	s.mu.Lock()
	s.last = &p
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// get returns the last progress, nil when none came.
func (s *progressState) get() *proto.Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// waitNotice tells the user on stderr what the request waits for, once
// delay has passed without an answer, and again whenever the daemon says
// something new (it waits for a human, and how many approver consoles and
// web approvers are connected, which the daemon says again as they come and
// go; it runs). Before the daemon says anything it names both a human and
// the command. On a terminal a spinner with the elapsed time and the
// progress in brief runs on one line, cut to the terminal's width and
// redrawn in place, until stop is called and is then erased; elsewhere one line is written for each thing
// the daemon says. stop must be called before anything else is written to
// stderr.
func (inv *invocation) waitNotice(id string, delay time.Duration, state *progressState) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	text := func() string {
		if p := state.get(); p != nil {
			if d := p.Describe(time.Now()); d != "" {
				return d
			}
		}
		return fmt.Sprintf("waiting for agent-sudod to answer request %s: it may need a human's approval, or the command is still running", id)
	}
	// brief is text for the spinner's line, which is cut to the
	// terminal's width: the most telling words first.
	brief := func() string {
		if p := state.get(); p != nil {
			if d := p.Brief(time.Now()); d != "" {
				return d
			}
		}
		return "waiting for agent-sudod: it may need a human's approval, or the command is still running"
	}
	go func() {
		defer close(finished)
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-t.C:
		}
		if !isTerminalWriter(inv.stderr) {
			said := ""
			for {
				if now := text(); now != said {
					inv.say("%s", now)
					said = now
				}
				select {
				case <-done:
					return
				case <-state.changed:
				}
			}
		}
		start := time.Now().Add(-delay)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		const frames = `|/-\`
		for i := 0; ; i++ {
			line := fmt.Sprintf("agent-sudo: %c %ds %s",
				frames[i%len(frames)], int(time.Since(start).Seconds()), visible(brief()))
			fmt.Fprintf(inv.stderr, "\r\x1b[K%s", fitLine(line, terminalColumns(inv.stderr)))
			select {
			case <-done:
				fmt.Fprint(inv.stderr, "\r\x1b[K")
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// fitLine returns line cut to fit a terminal of cols columns with one
// column to spare (a character in the last column would leave the cursor
// waiting to wrap, and the next "\r" would then redraw on the next line),
// ending with "…" when cut, after the last space that fits when there is
// one (termtext.Wrap's break). line is already escaped (visible); cols <= 0
// means unknown, and line is returned whole.
func fitLine(line string, cols int) string {
	if cols <= 0 || termtext.Width(line) <= cols-1 {
		return line
	}
	// "…" is East Asian ambiguous: Width counts it as wide as any
	// terminal may draw it.
	room := cols - 1 - termtext.Width(cutMark)
	if room < 1 {
		return ""
	}
	cut := termtext.Wrap(line, room)
	if len(cut) == 0 || termtext.Width(cut[0]) > room {
		return "" // a unit Wrap does not cut is wider than the terminal
	}
	return cut[0] + cutMark
}

// cutMark ends a line fitLine cut.
const cutMark = "…"

// terminalColumns returns the width of the terminal w writes to, as the
// terminal reports it (TIOCGWINSZ), read again each time so that a resize
// is followed; 0 when w is not a terminal or reports no width.
func terminalColumns(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// isTerminalWriter reports whether w is a terminal.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// readInput returns what the request's first stage should read: the content
// of the file from ("-" for stdin), or, when from is empty, all of stdin
// unless it is a terminal (or absent). It refuses more than
// proto.MaxStdinBytes rather than cutting the input short.
func (inv *invocation) readInput(from string) ([]byte, error) {
	var r io.Reader
	name := "stdin"
	switch from {
	case "":
		if inv.stdin == nil {
			return nil, nil
		}
		if f, ok := inv.stdin.(*os.File); ok {
			if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
				return nil, nil // a terminal: the human typing is not input
			}
			if err := awaitInput(f, cmp.Or(inv.stdinWait, stdinWait)); err != nil {
				return nil, err
			}
		}
		r = inv.stdin
	case "-":
		if inv.stdin == nil {
			return nil, nil
		}
		r = inv.stdin
	default:
		f, err := os.Open(from)
		if err != nil {
			return nil, fmt.Errorf("--stdin: %w", err)
		}
		defer f.Close()
		r, name = f, fmt.Sprintf("--stdin %q", from)
	}
	data, err := io.ReadAll(io.LimitReader(r, proto.MaxStdinBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > proto.MaxStdinBytes {
		return nil, hint.Wrap(fmt.Errorf("%s holds more than %d bytes, the most one request can carry", name, proto.MaxStdinBytes),
			fmt.Sprintf("a request is at most %d bytes and stdin travels as base64: write the data to a file you can write and copy it into place "+
				"(agent-sudo run -- install -m 0644 /tmp/FILE /etc/FILE), or pass --no-stdin if the command needs no input", proto.MaxRequestBytes))
	}
	return data, nil
}

// stdinWait is how long run waits, when it was not told whether to read
// stdin, for a pipe on stdin to show data or its end.
const stdinWait = 2 * time.Second

// awaitInput returns nil when f is not a pipe or socket, or when it has data
// or its end within wait; otherwise an error telling the user to choose.
// An agent's harness may leave stdin an open pipe that nobody writes: run
// must then neither wait forever nor go on without the input it may carry.
func awaitInput(f *os.File, wait time.Duration) error {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) == 0 {
		return nil
	}
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(wait/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 {
			return nil // data, its end, or an error the read will report
		}
		return hint.Wrap(fmt.Errorf("stdin is a pipe that sent neither data nor its end within %s", wait),
			"pass --stdin - to wait for it, or --no-stdin if the command needs no input")
	}
}
