package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"io/fs"
	"slices"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
)

// Exit statuses of audit besides the common ones (see the package
// documentation and the subcommands' help).
const (
	exitNotFound = 1  // show: no request has that id
	exitDataErr  = 65 // a corrupt line, or a broken chain (EX_DATAERR)
	exitNoInput  = 66 // the log cannot be read (EX_NOINPUT)
	exitConfig   = 78 // the configuration cannot be loaded (EX_CONFIG)
)

// auditDeps are the parts of the process the listing uses besides the
// invocation; tests replace them.
type auditDeps struct {
	now func() time.Time
	// loc is the time zone times are shown and dates read in.
	loc *time.Location
	// poll is how often --follow looks for new lines.
	poll time.Duration
}

func realAuditDeps() auditDeps {
	return auditDeps{now: time.Now, loc: time.Local, poll: time.Second}
}

// auditSource is where audit reads the logs: each --log, or audit_log of
// the configuration. Every audit subcommand takes these two flags, and they
// alone may also come before the subcommand's name.
type auditSource struct {
	logs   listFlag
	config string
}

func (s *auditSource) addFlags(fset *flag.FlagSet) {
	fset.Var(&s.logs, "log", "read the audit log `file` (default: audit_log of the configuration); repeatable, to read the logs of several daemons")
	fset.StringVar(&s.config, "config", "", "daemon configuration `file` to take audit_log from (default "+config.DefaultPath+")")
}

// paths are the --log files, or audit_log of the configuration.
func (s *auditSource) paths() ([]string, error) {
	if len(s.logs) > 0 {
		return s.logs, nil
	}
	path, explicit := config.DefaultPath, false
	if s.config != "" {
		path, explicit = s.config, true
	}
	cfg, err := config.Load(path, explicit)
	if err != nil {
		return nil, err
	}
	return []string{cfg.AuditLog}, nil
}

// auditSubcommand tells which audit subcommand args ask for and returns the
// arguments for it: show or verify when args name it, preceded by nothing
// but --log and --config; else the listing, with all of args.
func auditSubcommand(args []string) (string, []string) {
	fset := flag.NewFlagSet("audit", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	var src auditSource
	src.addFlags(fset)
	if fset.Parse(args) != nil || fset.NArg() == 0 {
		return "list", args
	}
	n := len(args) - fset.NArg()
	if name := fset.Arg(0); (name == "show" || name == "verify") && (n == 0 || args[n-1] != "--") {
		return name, append(slices.Clone(args[:n]), fset.Args()[1:]...)
	}
	return "list", args
}

// auditMain is "agent-sudo audit".
func auditMain(ctx context.Context, inv *invocation, args []string) int {
	return runAudit(ctx, inv, args, realAuditDeps())
}

// runAudit runs the audit subcommand args ask for; "audit help" shows the
// help, as "rules help" and "shim help" do.
func runAudit(ctx context.Context, inv *invocation, args []string, deps auditDeps) int {
	if len(args) == 1 && args[0] == "help" {
		return inv.showHelp(auditHelp)
	}
	switch sub, args := auditSubcommand(args); sub {
	case "show":
		return auditShowMain(ctx, inv, args)
	case "verify":
		return auditVerifyMain(ctx, inv, args)
	}
	return auditList(ctx, inv, args, deps)
}

// withOutput runs f with stdout behind an errWriter and returns f's
// status, or exitIO if writing failed.
func (inv *invocation) withOutput(cmd string, f func(out *errWriter) int) int {
	out := &errWriter{w: inv.stdout}
	code := f(out)
	if out.err != nil {
		return inv.fail(exitIO, "%s: write the output: %v", cmd, out.err)
	}
	return code
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) WriteString(s string) {
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
	}
}

// unreadable reports a log that cannot be read and returns the status.
func (inv *invocation) unreadable(cmd string, err error) int {
	hint := ""
	switch {
	case errors.Is(err, fs.ErrPermission):
		hint = "; the log is readable by root and the adm group"
	case errors.Is(err, fs.ErrNotExist):
		hint = "; pass --log FILE or --config FILE if agent-sudod writes it elsewhere"
	}
	return inv.fail(exitNoInput, "%s: cannot read the audit log: %v%s", cmd, err, hint)
}

// corrupt reports a corrupt line.
func (inv *invocation) corrupt(cmd string, le *audit.LineError) {
	inv.say("%s: %v; run 'agent-sudo audit verify'", cmd, le)
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
