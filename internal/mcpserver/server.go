package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the name of the one tool the server offers.
const ToolName = "execute"

// Defaults for the zero values of [Config].
const (
	// DefaultMaxOutput is how many bytes of each stream (the final stdout
	// and each stage's stderr) a result shows.
	DefaultMaxOutput = 64 << 10
	// DefaultProgressInterval is the time between two progress
	// notifications while an answer is awaited.
	DefaultProgressInterval = 5 * time.Second
)

// Config says where the daemon is and how requests are labelled.
type Config struct {
	// Socket is the path of agent-sudod's socket; empty means
	// client.DefaultSocket.
	Socket string
	// Session names the agent session in every request; the approver sees
	// it and the audit log groups requests by it.
	Session string
	// Host is this machine's name, sent in every request.
	Host string
	// MaxOutput caps each stream shown to the model, in bytes of output;
	// zero means DefaultMaxOutput. Output that is not valid UTF-8 is shown
	// as base64, which is a third longer.
	MaxOutput int
	// ProgressInterval is the time between progress notifications; zero
	// means DefaultProgressInterval.
	ProgressInterval time.Duration
	// Version is the version the server reports to clients; empty means
	// "devel".
	Version string
}

// withDefaults checks c and fills in its zero values.
func (c Config) withDefaults() (Config, error) {
	switch {
	case c.MaxOutput < 0:
		return c, fmt.Errorf("max output %d is negative", c.MaxOutput)
	case c.ProgressInterval < 0:
		return c, fmt.Errorf("progress interval %v is negative", c.ProgressInterval)
	case len(c.Session) > proto.MaxSessionLen:
		return c, fmt.Errorf("session name is %d bytes; at most %d are allowed", len(c.Session), proto.MaxSessionLen)
	case len(c.Host) > proto.MaxHostLen:
		return c, fmt.Errorf("host name is %d bytes; at most %d are allowed", len(c.Host), proto.MaxHostLen)
	}
	if c.Socket == "" {
		c.Socket = client.DefaultSocket
	}
	if c.MaxOutput == 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.Version == "" {
		c.Version = "devel"
	}
	return c, nil
}

// NewServer returns an MCP server offering the execute tool, configured by
// cfg. Connect it to a transport with its Run or Connect method.
//
// A call ends early only when its client cancels it or goes away: the SDK
// does not pass the cancellation of a session's context on to the calls in
// progress. [Run] does.
func NewServer(cfg Config) (*mcp.Server, error) {
	return newServer(context.Background(), cfg)
}

// newServer is NewServer whose calls also end when base ends.
func newServer(base context.Context, cfg Config) (*mcp.Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	h := &handler{cfg: cfg, client: client.New(cfg.Socket), base: base}
	srv := mcp.NewServer(&mcp.Implementation{
		Name:    "agent-sudo",
		Title:   "agent-sudo",
		Version: cfg.Version,
	}, &mcp.ServerOptions{
		Instructions: instructions,
		// Tools only: no logging capability, nothing else to advertise.
		Capabilities: &mcp.ServerCapabilities{},
	})
	destructive, openWorld := true, false
	srv.AddTool(&mcp.Tool{
		Name:        ToolName,
		Title:       "Run a command as root, approved by a human",
		Description: toolDescription,
		InputSchema: json.RawMessage(inputSchema),
		Annotations: &mcp.ToolAnnotations{
			Title:           "Run a command as root (human-approved)",
			DestructiveHint: &destructive,
			OpenWorldHint:   &openWorld,
		},
	}, h.execute)
	return srv, nil
}

// Run serves one MCP session on t until the client disconnects or ctx
// ends. When ctx ends, the calls in progress end too: their requests are
// withdrawn if they still wait for approval.
func Run(ctx context.Context, cfg Config, t mcp.Transport) error {
	srv, err := newServer(ctx, cfg)
	if err != nil {
		return err
	}
	if err := srv.Run(ctx, t); err != nil {
		return fmt.Errorf("mcpserver: serve: %w", err)
	}
	return nil
}

// handler serves execute calls. It holds only configuration, so calls may
// run concurrently.
type handler struct {
	cfg    Config
	client *client.Client
	// base ends every call when it ends.
	base context.Context
}

// execute is the execute tool. Every failure is a tool result with IsError
// set, so that the model sees it; the error result is never used.
func (h *handler) execute(ctx context.Context, call *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(h.base, cancel)()
	var raw json.RawMessage
	if call.Params != nil {
		raw = call.Params.Arguments
	}
	a, err := parseArgs(raw)
	if err != nil {
		return toolError(err.Error() + "\nNothing was sent; fix the arguments and call again."), nil
	}
	req := a
	req.ID, req.Host, req.Session = uuid.NewString(), h.cfg.Host, h.cfg.Session
	var token any
	if call.Params != nil {
		token = call.Params.GetProgressToken()
	}
	// What the daemon last said of the request (its progress lines): the
	// progress notifications and a failure's text say it.
	var last atomic.Pointer[proto.Progress]
	c := *h.client
	c.Progress = func(p proto.Progress) { last.Store(&p) }
	if token != nil && call.Session != nil {
		stop := h.reportProgress(ctx, call.Session, token, &last)
		defer stop()
	}
	// Cancelling ctx (the client cancelled the call or went away) closes
	// the connection, and the daemon withdraws a request that still waits.
	resp, err := c.Run(ctx, req)
	if err != nil {
		return toolError(h.describeFailure(err, req.ID, last.Load())), nil
	}
	return formatResult(req, resp, h.cfg.MaxOutput), nil
}

// reportProgress sends a progress notification every interval until the
// returned function is called, saying what the daemon last said of the
// request (last); that function returns once no notification can be sent
// any more, so none follows the result.
func (h *handler) reportProgress(ctx context.Context, ss *mcp.ServerSession, token any, last *atomic.Pointer[proto.Progress]) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		tick := time.NewTicker(h.cfg.ProgressInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				waited := now.Sub(start)
				msg := "waiting for approval, or for the command to finish"
				if p := last.Load(); p != nil {
					if d := p.Describe(now); d != "" {
						msg = d
					}
				}
				// A failed notification (the client went away) is not
				// worth ending the call for: ctx tells when to stop.
				_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token,
					// Seconds waited: it only grows, as progress must.
					Progress: waited.Seconds(),
					Message:  fmt.Sprintf("%s (%s)", msg, waited.Round(time.Second)),
				})
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// describeFailure explains an exchange with the daemon that produced no
// answer; last is the daemon's last progress line for it (nil: none).
func (h *handler) describeFailure(err error, id string, last *proto.Progress) string {
	var reqErr *proto.RequestError
	switch {
	case errors.Is(err, client.ErrUnreachable):
		return fmt.Sprintf("agent-sudo is not available: %v. Nothing was sent. Tell the user: the agent-sudo daemon must be running (systemctl status agent-sudo) and this user must be allowed to open its socket.", err)
	case client.DaemonDown(err):
		// Connected, then reset unanswered: what a daemon that fails to
		// start does to the connections systemd queued for it.
		return fmt.Sprintf("agent-sudod is not running: %v. Nothing ran. Tell the user: it may have failed to start; journalctl -u agent-sudo says why, systemctl status agent-sudo whether it failed.", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("the call was cancelled before agent-sudod answered request %s: %s.", id, proto.Abandoned(last))
	case errors.As(err, &reqErr):
		return fmt.Sprintf("the request cannot be sent: %v. Nothing was sent; fix the arguments and call again.", err)
	case errors.Is(err, proto.ErrProtocol):
		return fmt.Sprintf("agent-sudod at %s sent a bad answer to request %s: %v. It may have run; tell the user.", h.cfg.Socket, id, err)
	}
	return fmt.Sprintf("lost the connection to agent-sudod at %s while waiting for request %s: %v. It may have run; check with the user before retrying.", h.cfg.Socket, id, err)
}

// toolError is a tool result that reports an error to the model.
func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
