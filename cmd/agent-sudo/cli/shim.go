package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// The sudo shim: agent-sudo run under the name "sudo" (a symbolic link that
// "agent-sudo shim install" creates) turns a sudo command line into a run
// request.

// shimName is the program name that makes the binary act as sudo.
const shimName = "sudo"

// envReason gives the shim's requests a reason; shimDefaultReason is used
// without it.
const (
	envReason         = "AGENT_SUDO_REASON"
	shimDefaultReason = "sudo via agent-sudo shim"
)

// exitShimUsage is what sudo exits with for a command line it refuses.
const exitShimUsage = 1

// shimEnvAllow lists the variables that sudo -E forwards: the daemon's
// built-in allowlist ([runner.DefaultAllowlist]), with LC_* spelled out as
// the locale categories of the C library, since the environment is read one
// name at a time. Another glob would be skipped, so a test checks there is
// none.
func shimEnvAllow() []string {
	var names []string
	for _, p := range runner.DefaultAllowlist() {
		switch {
		case p == "LC_*":
			names = append(names, "LC_ALL", "LC_ADDRESS", "LC_COLLATE", "LC_CTYPE", "LC_IDENTIFICATION",
				"LC_MEASUREMENT", "LC_MESSAGES", "LC_MONETARY", "LC_NAME", "LC_NUMERIC",
				"LC_PAPER", "LC_TELEPHONE", "LC_TIME")
		case !strings.HasSuffix(p, "*"):
			names = append(names, p)
		}
	}
	return names
}

// Dispatch runs the program that name, the base name of the binary's
// argv[0], stands for: the sudo shim when it is "sudo", and the agent-sudo
// command line ([Main]) otherwise. The arguments are as for Main.
func Dispatch(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if name != shimName {
		return Main(ctx, args, stdin, stdout, stderr, getenv)
	}
	inv := &invocation{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	return sudoMain(ctx, inv, realShimDeps(), args)
}

// shimDeps are the parts of the process the shim uses besides the
// invocation; tests replace them.
type shimDeps struct {
	currentUser func() (*user.User, error)
	getwd       func() (string, error)
}

func realShimDeps() shimDeps {
	return shimDeps{currentUser: user.Current, getwd: os.Getwd}
}

// sudoCommand is a parsed sudo command line.
type sudoCommand struct {
	help bool
	// nonInteractive is -n: fail at once when no approver could answer.
	nonInteractive bool
	// envAll is -E: forward the variables of shimEnvAllow.
	envAll bool
	// envNames are the names given with --preserve-env=LIST, in order.
	envNames []string
	// user is the -u argument, "" without -u.
	user string
	// assign are the NAME=value arguments between the options and the
	// command, in order: sudo sets them in the command's environment.
	assign []string
	argv   []string
}

// usageError is a sudo command line the shim refuses.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func shimUsage(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// parseSudo parses the sudo options the shim supports. Like sudo, it stops
// at "--" or at the first argument that is not an option; the NAME=value
// arguments that follow, up to the command, are variables to set.
func parseSudo(args []string) (*sudoCommand, error) {
	c := &sudoCommand{}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, value, hasValue := strings.Cut(a[2:], "=")
			switch name {
			case "non-interactive", "set-home", "help":
				if hasValue {
					return nil, shimUsage("sudo option --%s takes no value", name)
				}
				c.help = c.help || name == "help"
				c.nonInteractive = c.nonInteractive || name == "non-interactive"
			case "preserve-env":
				if !hasValue {
					c.envAll = true
					break
				}
				for n := range strings.SplitSeq(value, ",") {
					if !proto.ValidEnvName(n) {
						return nil, shimUsage("--preserve-env: %q is not a variable name: names match [A-Za-z_][A-Za-z0-9_]*", n)
					}
					c.envNames = append(c.envNames, n)
				}
			case "user":
				if !hasValue {
					if i+1 == len(args) {
						return nil, shimUsage("sudo option --user needs a user name")
					}
					i++
					value = args[i]
				}
				c.user = value
			default:
				return nil, unsupportedFlag("--" + name)
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'n':
				c.nonInteractive = true
			case 'H':
				// -H: the daemon always sets HOME to the home of the
				// user the command runs as.
			case 'E':
				c.envAll = true
			case 'h':
				c.help = true
			case 'u':
				value := a[j+1:]
				if value == "" {
					if i+1 == len(args) {
						return nil, shimUsage("sudo option -u needs a user name")
					}
					i++
					value = args[i]
				}
				c.user = value
				j = len(a)
			default:
				return nil, unsupportedFlag("-" + string(a[j]))
			}
		}
	}
	for ; i < len(args) && isAssignment(args[i]); i++ {
		c.assign = append(c.assign, args[i])
	}
	c.argv = args[i:]
	return c, nil
}

// isAssignment reports whether a is NAME=value with a valid variable name,
// which sudo takes for a variable to set rather than the command.
func isAssignment(a string) bool {
	name, _, ok := strings.Cut(a, "=")
	return ok && proto.ValidEnvName(name)
}

// unsupportedFlag explains why a sudo option is refused.
func unsupportedFlag(flag string) error {
	why := ""
	switch flag {
	case "-i", "--login", "-s", "--shell":
		why = "there is no interactive shell; run the command itself, or sh -c '...' if it needs a shell"
	case "-S", "--stdin", "-A", "--askpass":
		why = "no password is ever asked for: a human approves each command instead"
	case "-k", "--reset-timestamp", "-K", "--remove-timestamp", "-v", "--validate":
		why = "there are no cached credentials: each command is approved on its own"
	case "-l", "--list":
		why = "the rules are in agent-sudod's configuration; ask the user what they allow"
	case "-b", "--background":
		why = "commands cannot run in the background"
	case "-g", "--group":
		why = "commands run as root, or with -u as yourself"
	default:
		why = "it has no meaning for agent-sudo"
	}
	return shimUsage("sudo flag %s is not supported: %s. The shim supports -n, -E, --preserve-env=LIST, -H, -u root and --; see 'agent-sudo help shim'", flag, why)
}

// sudoMain is agent-sudo run under the name sudo. It turns the sudo
// command line into an "agent-sudo run" command line and runs that, so that
// the request, the output and the exit status are exactly those of run.
func sudoMain(ctx context.Context, inv *invocation, deps shimDeps, args []string) int {
	c, err := parseSudo(args)
	if err != nil {
		return inv.shimFail("%v", err)
	}
	if c.help {
		if err := shimSudoUsage(inv.stdout); err != nil {
			return inv.fail(exitIO, "write help: %v", err)
		}
		return 0
	}
	if len(c.argv) == 0 {
		return inv.shimFail("no command given; usage: sudo [-n] [-E] [--preserve-env=LIST] [-u root] [--] [VAR=value...] COMMAND [ARG...]")
	}
	privileged, err := deps.runsAsRoot(c.user)
	if err != nil {
		return inv.shimFail("%v", err)
	}
	for _, a := range c.argv {
		// run would take a standalone '|' for a stage separator, while sudo
		// passes it on as an argument.
		if a == "|" {
			return inv.shimFail("a standalone '|' argument cannot go through the shim; use agent-sudo run, where '|' separates pipeline stages")
		}
	}
	// stdin is forwarded as agent-sudo run forwards it (read to its end
	// when it is not a terminal), so "echo x | sudo tee FILE" works and the
	// human sees x before deciding.

	reason := inv.getenv(envReason)
	if reason == "" {
		reason = shimDefaultReason
	}
	runArgs := []string{"--reason", reason}
	names := c.envNames
	if c.envAll {
		names = append(shimEnvAllow(), names...)
	}
	// VAR=value arguments come first and win over a forwarded variable of
	// the same name, as in sudo; the daemon's environment policy checks
	// them like any other (its refusal names the variable).
	seen := map[string]bool{}
	for _, a := range c.assign {
		n, _, _ := strings.Cut(a, "=")
		seen[n] = true
		runArgs = append(runArgs, "--env", a)
	}
	for _, n := range names {
		if v := inv.getenv(n); v != "" && !seen[n] {
			seen[n] = true
			runArgs = append(runArgs, "--env", n+"="+v)
		}
	}
	if !privileged {
		runArgs = append(runArgs, "--unprivileged")
	}
	// sudo runs the command in the caller's directory.
	if dir, err := deps.getwd(); err == nil && filepath.IsAbs(dir) {
		runArgs = append(runArgs, "--cwd", dir)
	}
	if c.nonInteractive {
		runArgs = append(runArgs, "--non-interactive")
	}
	runArgs = append(runArgs, "--")
	return runShim(ctx, inv, append(runArgs, c.argv...))
}

// runsAsRoot decides what -u USER means: root (or none) runs privileged,
// the caller's own user runs unprivileged, and any other user is refused.
func (d shimDeps) runsAsRoot(name string) (bool, error) {
	switch name {
	case "", "root", "0", "#0":
		return true, nil
	}
	if u, err := d.currentUser(); err == nil && (name == u.Username || name == "#"+u.Uid) {
		return u.Uid == "0", nil
	}
	return false, shimUsage("sudo -u %s is not supported: agent-sudo runs commands as root, or (with -u and your own user name) as yourself", name)
}

// shimFail reports a refused sudo command line and returns sudo's exit
// status for it.
func (inv *invocation) shimFail(format string, args ...any) int {
	fmt.Fprintf(inv.stderr, "agent-sudo shim: %s\n", visible(fmt.Sprintf(format, args...)))
	return exitShimUsage
}

func shimSudoUsage(w io.Writer) error {
	_, err := io.WriteString(w, `usage: sudo [-n] [-E] [--preserve-env=LIST] [-H] [-u root] [--] [VAR=value...] COMMAND [ARG...]

This sudo is the agent-sudo shim: it asks agent-sudod to run COMMAND as root
once a human has approved it. See 'agent-sudo help shim'.
`)
	return err
}

func shimInstallUsage() *usage {
	return &usage{
		name:     "shim install",
		synopsis: []string{"agent-sudo shim install DIR"},
		text: strings.Replace(`Install a sudo shim: DIR/sudo becomes a symbolic link to this agent-sudo
binary, which acts as sudo when it is run under that name. With DIR first in
an agent's PATH, the agent's "sudo apt install nginx" becomes an agent-sudo
request: a human approves it, agent-sudod runs it, and the agent gets the
command's stdout, stderr and exit status as sudo would give them.

install creates DIR if needed, replaces a symbolic link DIR/sudo, refuses to
touch anything else called DIR/sudo, and prints the line that puts DIR first
in PATH, e.g.

    export PATH="$HOME/.local/share/agent-sudo/bin:$PATH"

sudo options the shim supports (anything else is refused, with exit status 1
and nothing sent):
  -n, --non-interactive  fail at once (exit status 1) when no rule allows the
                         command and no approver is connected to answer
  -E, --preserve-env     forward those of the caller's variables that
                         agent-sudod allows by default, never the whole
                         environment:
                         ALLOWLIST
  --preserve-env=LIST    forward the named variables (comma-separated); the
                         daemon refuses the request if one is not allowed
  -H, --set-home         accepted; HOME is always the target user's home
  -u root, -u 0          run as root (the default)
  -u YOURSELF            your own user name: run without root, still after
                         approval. Any other user is refused.
  --                     end of options
  -h, --help             show a short usage and exit
  VAR=value              before the command: set VAR for the command, as
                         sudo does ("sudo DEBIAN_FRONTEND=noninteractive
                         apt-get install -y nginx"); the daemon's
                         environment policy decides whether VAR may be set

The command is sent as it is: "sudo sh -c 'echo hi | tr a-z A-Z'" asks the
human to approve exactly sh -c 'echo hi | tr a-z A-Z'. It runs in the
caller's working directory.

environment:
  AGENT_SUDO_REASON   the reason the approver sees (default "sudo via
                      agent-sudo shim")
  AGENT_SUDO_SESSION  the session name (default: none)
  AGENT_SUDO_SOCKET   agent-sudod's socket

stdin: when stdin is not a terminal it is read to its end and sent with the
request, as 'agent-sudo run' does, so "echo x | sudo tee FILE", "sudo tee -a
FILE" and "sudo dd of=FILE" work; the human sees the input before deciding.
At most 737280 bytes; more is refused, never cut. Larger files: write them
where you can, then copy them: sudo install -m 0644 /tmp/FILE /etc/FILE.
`, "ALLOWLIST", strings.Join(runner.DefaultAllowlist(), ", "), 1),
		exits: []exitDoc{
			{"0", "the shim was installed"},
			{"2", "usage error: not exactly one DIR"},
			{"70", "the shim could not be installed"},
			{"74", "the PATH line could not be written"},
		},
		exitNote: `
The installed sudo exits as 'agent-sudo run' does (the command's own status,
or 69, 70, 74, 77, 124 or 130 for agent-sudo's outcomes), and 1 for a refused
sudo command line.
`,
		args: true,
	}
}

func shimHelp(_ *invocation, w io.Writer) error {
	u := shimInstallUsage()
	return u.write(w, u.newFlagSet())
}

// shimMain is "agent-sudo shim": only "shim install" exists.
func shimMain(ctx context.Context, inv *invocation, args []string) int {
	return inv.runSubcommand(ctx, "shim", args)
}

// shimInstallMain is "agent-sudo shim install DIR".
func shimInstallMain(_ context.Context, inv *invocation, args []string) int {
	u := shimInstallUsage()
	args, code, ok := inv.parse(u, u.newFlagSet(), args)
	switch {
	case !ok:
		return code
	case len(args) != 1:
		return inv.fail(exitUsage, "shim install: want exactly one directory, got %d arguments; see 'agent-sudo help shim'", len(args))
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return inv.fail(exitSoftware, "shim install: find this program's path: %v", err)
	}
	link, err := installShim(args[0], exe)
	if err != nil {
		return inv.fail(exitSoftware, "shim install: %v", err)
	}
	dir := filepath.Dir(link)
	if _, err := fmt.Fprintf(inv.stdout, "export PATH=%s\n", shellPathValue(dir)); err != nil {
		return inv.fail(exitIO, "write the PATH line: %v", err)
	}
	inv.say("installed %s -> %s; put %s first in the agent's PATH, as the line above does", link, exe, dir)
	return 0
}

// installShim makes dir/sudo a symbolic link to exe, creating dir if
// needed, and returns the link's path. An existing symbolic link is
// replaced; anything else is left alone and reported.
func installShim(dir, exe string) (string, error) {
	if dir == "" {
		return "", errors.New("the directory is empty")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create the directory: %w", err)
	}
	link := filepath.Join(dir, shimName)
	fi, err := os.Lstat(link)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Symlink(exe, link); err != nil {
			return "", fmt.Errorf("create the link: %w", err)
		}
		return link, nil
	case err != nil:
		return "", fmt.Errorf("check %s: %w", link, err)
	case fi.Mode()&fs.ModeSymlink == 0:
		return "", fmt.Errorf("%s exists and is not a symbolic link; it was left alone: remove it yourself or choose another directory", link)
	}
	if target, err := os.Readlink(link); err == nil && target == exe {
		return link, nil
	}
	// Replace the link atomically: a new link under a temporary name,
	// renamed over the old one.
	tmp := filepath.Join(dir, ".sudo.tmp"+strconv.Itoa(os.Getpid()))
	_ = os.Remove(tmp)
	if err := os.Symlink(exe, tmp); err != nil {
		return "", fmt.Errorf("create the link: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("replace %s: %w", link, err)
	}
	return link, nil
}

// shellPathValue is the value of a POSIX shell assignment that puts dir
// first in PATH.
func shellPathValue(dir string) string {
	safe := true
	for _, r := range dir {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+@%,:", r)) {
			safe = false
			break
		}
	}
	if safe {
		return `"` + dir + `:$PATH"`
	}
	return "'" + strings.ReplaceAll(dir, "'", `'\''`) + `':"$PATH"`
}
