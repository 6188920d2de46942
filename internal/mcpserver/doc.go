// Package mcpserver serves agent-sudo to coding agents as a Model Context
// Protocol (MCP) server, built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// The server has one tool, "execute" ([ToolName]). A call names a command,
// as an argv array or as a pipeline of argv arrays, and a reason; the server
// sends it to agent-sudod as one request (package proto) and turns the
// answer into a text result for the model: the status, the request id and
// each stage's exit code; the final stage's stdout and every stage's
// stderr, as text when valid UTF-8 and as base64 otherwise, each cut at
// [Config.MaxOutput] bytes with a "(truncated: N more bytes)" marker; and
// IsError when the request was denied, timed out or failed, or the final
// stage exited non-zero.
//
// What it promises: nothing runs here (the daemon decides and runs); a
// malformed call gets a tool error saying how to fix it, never a request a
// human has to read; while the answer is awaited a call with a progress
// token gets a progress notification every [Config.ProgressInterval]; a
// call the client cancels, or a client that goes away, closes the
// connection to the daemon, which withdraws a request still waiting for
// approval (one already running is not stopped), and a cancelled call gets
// no reply. [Serve] speaks the stdio transport: a line that is not JSON is
// answered -32700 and one that is not JSON-RPC -32600, and serving goes
// on; at the end of the input each call in progress is cancelled and
// answered before Serve returns a [CutOffError].
//
// docs/agents.md describes the tool to its users; docs/development.md
// says why Serve does not use the SDK's own stdio transport.
package mcpserver
