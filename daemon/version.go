package daemon

import "runtime/debug"

// buildVersion reads the main module's version from the build information,
// which `go install module@version` fills in.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
