package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
)

// Run a two-stage pipeline as root, waiting at most ten minutes for a human
// to approve it and for it to finish.
func ExampleClient_Run() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	c := client.New(client.DefaultSocket)
	resp, err := c.Run(ctx, &proto.Request{
		Session:    "docs-example",
		Reason:     "check whether nginx is installed",
		Pipeline:   [][]string{{"dpkg", "-l"}, {"grep", "nginx"}},
		Privileged: true,
	})
	switch {
	case errors.Is(err, client.ErrUnreachable):
		log.Fatalf("%v; is agent-sudod running?", err)
	case errors.Is(err, context.DeadlineExceeded):
		log.Fatalf("no answer in time (the request may still run): %v", err)
	case err != nil:
		log.Fatal(err)
	}

	switch resp.Status {
	case proto.StatusOK:
		for i, st := range resp.Stages {
			fmt.Printf("stage %d exited %d\n", i, st.ExitCode)
			os.Stderr.Write(st.Stderr)
		}
		os.Stdout.Write(resp.Stdout)
	case proto.StatusDenied:
		// Message comes from the daemon: quote it rather than let it
		// write control sequences to a terminal.
		fmt.Printf("denied: %q\n", resp.Message)
	default: // timeout or error
		fmt.Printf("%s: %q\n", resp.Status, resp.Message)
	}
}

// Check that the daemon is up and serves this user.
func ExampleClient_Ping() {
	resp, err := client.New(client.DefaultSocket).Ping(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("agent-sudod %q: %s\n", resp.Version, resp.Status)
}
