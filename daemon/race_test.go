//go:build race

package daemon_test

// raceEnabled builds the daemon under test with the race detector too when
// the tests themselves run with it.
const raceEnabled = true
