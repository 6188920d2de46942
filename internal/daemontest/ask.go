package daemontest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
)

// Asked is a request Ask sent, on its way.
type Asked struct {
	// ID is the request's id.
	ID string
	// Done receives the response, once. A client error comes as a
	// response with the status "client error" and the error as message.
	Done <-chan *proto.Response
	// Cancel gives up on the request: the client hangs up, as an agent
	// that is interrupted does.
	Cancel context.CancelFunc
	t      testing.TB
}

// Ask sends req to the daemon with the client library in the background,
// as an agent would, giving up after 90s or when t ends; an empty req.ID
// is set to one of its own. The Asked's Wait fails t.
func (d *Daemon) Ask(t testing.TB, req *proto.Request) *Asked {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	if req.ID == "" {
		req.ID = fmt.Sprintf("ask-%d", time.Now().UnixNano())
	}
	done := make(chan *proto.Response, 1)
	go func() {
		resp, err := client.New(d.Socket).Run(ctx, req)
		if err != nil {
			resp = &proto.Response{Status: "client error", Message: err.Error()}
		}
		done <- resp
	}()
	return &Asked{ID: req.ID, Done: done, Cancel: cancel, t: t}
}

// Wait returns the response, failing the test when none comes within 60s.
func (a *Asked) Wait() *proto.Response {
	a.t.Helper()
	select {
	case resp := <-a.Done:
		return resp
	case <-time.After(60 * time.Second):
		a.t.Fatalf("request %s got no answer within 60s", a.ID)
	}
	return nil
}
