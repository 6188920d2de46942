//go:build !race

package daemontest

const raceEnabled = false
