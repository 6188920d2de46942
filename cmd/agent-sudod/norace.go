//go:build !race

package main

// raceEnvNames: none without the race detector (race.go).
var raceEnvNames []string
