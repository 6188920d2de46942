package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// usage describes one command or subcommand for parsing its arguments and
// for its help. Every command's help has the same shape: the usage lines,
// the description, the flags (from the command's flag set) and the exit
// statuses.
type usage struct {
	// name is the command as typed after "agent-sudo": "run", "audit show".
	name string
	// synopsis holds the usage lines, complete: "agent-sudo run [flags] CMD".
	synopsis []string
	// text is the description, paragraphs separated by blank lines, ending
	// with a newline.
	text string
	// exits are the exit statuses, in order.
	exits []exitDoc
	// exitNote, when set, follows the exit statuses.
	exitNote string
	// args says whether the command takes arguments besides its flags.
	args bool
	// interspersed lets flags come anywhere among the arguments, up to
	// "--"; otherwise the first argument that is not a flag ends them.
	interspersed bool
	// hidden names flags the help leaves out: internal ones, which only
	// another of our programs passes (their usage text documents them).
	hidden []string
}

// exitDoc is one exit status in a help text. Its meaning may run over
// several lines.
type exitDoc struct {
	code, meaning string
}

// newFlagSet returns an empty flag set for the command u describes. Its
// errors are not printed: parse reports them in one line.
func (u *usage) newFlagSet() *flag.FlagSet {
	fset := flag.NewFlagSet(u.name, flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	return fset
}

// parse parses args with fset, which holds the command's flags, and
// returns the other arguments. When the arguments ask for help (-h, -help,
// --help) it writes the help to stdout; when they are wrong it says why.
// In both cases ok is false and code is the exit status to return.
func (inv *invocation) parse(u *usage, fset *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	var err error
	if u.interspersed {
		pos, err = parseInterspersed(fset, args)
	} else {
		err = fset.Parse(args)
		pos = fset.Args()
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, inv.showHelp(func(_ *invocation, w io.Writer) error { return u.write(w, fset) }), false
	case err != nil:
		return nil, inv.fail(exitUsage, "%s: %v; see 'agent-sudo help %s'", u.name, err, u.name), false
	case !u.args && len(pos) > 0:
		return nil, inv.fail(exitUsage, "%s: unexpected argument %q; see 'agent-sudo help %s'", u.name, pos[0], u.name), false
	}
	return pos, 0, true
}

// parseInterspersed parses flags anywhere among the arguments, up to "--",
// and returns the other arguments.
func parseInterspersed(fset *flag.FlagSet, args []string) ([]string, error) {
	pos := []string{}
	for {
		if err := fset.Parse(args); err != nil {
			return nil, err
		}
		rest := fset.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// write writes the help of the command u describes, with the flags of
// fset.
func (u *usage) write(w io.Writer, fset *flag.FlagSet) error {
	var b strings.Builder
	for i, s := range u.synopsis {
		if i == 0 {
			b.WriteString("usage: ")
		} else {
			b.WriteString("       ")
		}
		b.WriteString(s + "\n")
	}
	if u.text != "" {
		b.WriteString("\n" + u.text)
	}
	if flags := flagUsage(fset, u.hidden); flags != "" {
		b.WriteString("\nflags:\n" + flags)
	}
	if len(u.exits) > 0 {
		width := 3 // "130": the codes line up across commands
		for _, e := range u.exits {
			width = max(width, len(e.code))
		}
		b.WriteString("\nexit status:\n")
		for _, e := range u.exits {
			indent := strings.Repeat(" ", 2+width+2)
			fmt.Fprintf(&b, "  %-*s  %s\n", width, e.code, strings.ReplaceAll(e.meaning, "\n", "\n"+indent))
		}
	}
	if u.exitNote != "" {
		b.WriteString(u.exitNote)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// flagUsage lists a flag set's flags for help text: each flag with its
// argument's name on one line, then its description and its default, when
// that is not the zero value. The flags named in hidden are left out.
func flagUsage(fset *flag.FlagSet, hidden []string) string {
	var b strings.Builder
	fset.VisitAll(func(f *flag.Flag) {
		if slices.Contains(hidden, f.Name) {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if arg != "" {
			fmt.Fprintf(&b, " %s", arg)
		}
		fmt.Fprintf(&b, "\n    \t%s", usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0s" && f.DefValue != "[]" {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		}
		b.WriteString("\n")
	})
	return b.String()
}

// runSubcommand runs the subcommand of the command named parent that
// args[0] names, with the arguments after it. "help", -h and --help show
// help, the parent's help.
func (inv *invocation) runSubcommand(ctx context.Context, parent string, args []string) int {
	p, _ := lookup(parent)
	if len(args) == 0 {
		return inv.fail(exitUsage, "%s: no subcommand given; see 'agent-sudo help %s'", parent, parent)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		return inv.showHelp(p.help)
	}
	for _, c := range p.subs {
		if c.name == args[0] {
			return c.run(ctx, inv, args[1:])
		}
	}
	return inv.fail(exitUsage, "%s: unknown subcommand %q; see 'agent-sudo help %s'", parent, args[0], parent)
}
