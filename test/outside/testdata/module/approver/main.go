// Command approver is an approver written against package approval alone,
// in a module of its own: it connects to the approver socket named by its
// argument, says "connected" once the daemon's hello has come, prints each
// request that waits and denies it, and exits once the daemon has taken
// one denial.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "approver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: approver SOCKET")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := approval.Dial(ctx, args[0])
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		m, err := c.Recv(ctx)
		if err != nil {
			return err
		}
		switch m.Type {
		case approval.MsgHello:
			fmt.Printf("connected to agent-sudod %s\n", m.Version)
		case approval.MsgPending:
			var argv []string
			if m.Request != nil {
				for _, stage := range m.Request.Pipeline {
					argv = append(argv, strings.Join(stage, " "))
				}
			}
			fmt.Printf("waiting %s: %s\n", m.ID, strings.Join(argv, " | "))
			if err := c.Decide(m.ID, m.Hash, approval.DenyOnce, "denied from another module"); err != nil {
				return err
			}
		case approval.MsgResult:
			if !m.OK {
				return fmt.Errorf("the daemon refused the decision on %s: %s", m.ID, m.Error)
			}
			fmt.Printf("denied %s\n", m.ID)
			return nil
		}
	}
}
