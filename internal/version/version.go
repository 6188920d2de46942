// Package version is agent-sudo's version, the same for both binaries: the
// one `make build` sets at link time, else the module version the binary was
// built from (`go install module@version` fills it in), else "devel".
package version

import (
	"runtime/debug"
	"sync"
)

// version is set with -ldflags "-X
// github.com/agent-sudo/agent-sudo/internal/version.version=..." by `make
// build` and `make deb`.
var version string

// String returns the version.
func String() string {
	if version != "" {
		return version
	}
	return fromBuild()
}

// fromBuild is buildVersion, read once: every answer of the daemon carries
// the version, and the build information is parsed anew at each read.
var fromBuild = sync.OnceValue(buildVersion)

// buildVersion reads the main module's version from the build information.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
