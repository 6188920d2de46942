// Command agent is an agent written against package client alone, in a
// module of its own: it asks the daemon at the socket named by its first
// argument to run the rest of its arguments as one stage, and prints the
// answer's status and message.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: agent SOCKET PROGRAM [ARG...]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := client.New(os.Args[1]).Run(ctx, &proto.Request{
		Session:    "outside",
		Pipeline:   [][]string{os.Args[2:]},
		Reason:     "asked from another module",
		Privileged: true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s: %s\n", resp.ID, resp.Status, resp.Message)
}
