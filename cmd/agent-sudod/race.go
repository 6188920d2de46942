//go:build race

package main

// raceEnvNames are passed on to the console too in a build with the race
// detector (the tests'): GORACE, whose atexit_sleep_ms=0 spares each of the
// console's exits a second (docs/development.md, "How the end-to-end tests
// stay quick and deterministic"). A release build passes nothing more.
var raceEnvNames = []string{"GORACE"}
