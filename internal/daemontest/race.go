//go:build race

package daemontest

// raceEnabled builds the binaries under test with the race detector too
// when the tests themselves run with it.
const raceEnabled = true
