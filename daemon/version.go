package daemon

import "github.com/agent-sudo/agent-sudo/internal/version"

// Version is the daemon's version: set at link time by the Makefile, else
// from the module's build information (package internal/version).
func Version() string { return version.String() }
