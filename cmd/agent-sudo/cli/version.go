package cli

import (
	"context"
	"fmt"
	"io"
)

// version is set with -ldflags "-X .../cmd/agent-sudo/cli.version=..." by
// `make build` and `make deb`; when empty, the module's build information
// decides (see buildVersion).
var version string

// Version returns agent-sudo's version: the one set at link time, else the
// module version it was built from, else "devel".
func Version() string {
	if version != "" {
		return version
	}
	return buildVersion()
}

// versionMain is "agent-sudo version" (also "agent-sudo --version").
func versionMain(_ context.Context, inv *invocation, args []string) int {
	if len(args) > 0 {
		return inv.fail(exitUsage, "version: unexpected argument %q; usage: agent-sudo version", args[0])
	}
	if _, err := fmt.Fprintf(inv.stdout, "agent-sudo %s\n", Version()); err != nil {
		return inv.fail(exitIO, "write version: %v", err)
	}
	return 0
}

func versionHelp(_ *invocation, w io.Writer) error {
	_, err := io.WriteString(w, `usage: agent-sudo version
       agent-sudo --version

Prints agent-sudo's version on stdout, as "agent-sudo VERSION".

exit status:
  0    the version was printed
  2    an argument was given
  74   writing the version failed
`)
	return err
}
