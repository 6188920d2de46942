package daemon

import (
	"runtime/debug"
	"sync"
)

// buildVersion reads the main module's version from the build information,
// which `go install module@version` fills in.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// Version is the daemon's version: set at link time by the Makefile, else
// from the module's build information.
func Version() string {
	if version != "" {
		return version
	}
	return moduleVersion()
}

// moduleVersion is buildVersion, read once: every answer carries the
// version, and the build information is parsed anew at each read.
var moduleVersion = sync.OnceValue(buildVersion)

// version is set with -ldflags "-X .../daemon.version=..." by `make build`.
var version string
