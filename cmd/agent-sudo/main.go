// Command agent-sudo is what an agent runs to ask agent-sudod, the agent-sudo
// daemon, to run a command once a human has approved it. All of it lives in
// package cli; "agent-sudo help" describes the commands. Run under the name
// "sudo" (see "agent-sudo help shim"), it acts as sudo.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/agent-sudo/agent-sudo/cmd/agent-sudo/cli"
)

func main() {
	// SIGINT or SIGTERM cancels ctx: Main closes the connection to the
	// daemon at once and returns 130.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Dispatch(ctx, filepath.Base(os.Args[0]), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
