package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/agent-sudo/agent-sudo/internal/version"
)

// Version returns agent-sudo's version: the one set at link time, else the
// module version it was built from, else "devel" (package internal/version).
func Version() string { return version.String() }

func versionUsage() *usage {
	return &usage{
		name:     "version",
		synopsis: []string{"agent-sudo version", "agent-sudo --version"},
		text:     "Prints agent-sudo's version on stdout, as \"agent-sudo VERSION\".\n",
		exits: []exitDoc{
			{"0", "the version was printed"},
			{"2", "an argument was given"},
			{"74", "writing the version failed"},
		},
	}
}

func versionHelp(_ *invocation, w io.Writer) error {
	u := versionUsage()
	return u.write(w, u.newFlagSet())
}

// versionMain is "agent-sudo version" (also "agent-sudo --version").
func versionMain(_ context.Context, inv *invocation, args []string) int {
	u := versionUsage()
	if _, code, ok := inv.parse(u, u.newFlagSet(), args); !ok {
		return code
	}
	if _, err := fmt.Fprintf(inv.stdout, "agent-sudo %s\n", Version()); err != nil {
		return inv.fail(exitIO, "write version: %v", err)
	}
	return 0
}
