// Package mcpserver serves agent-sudo to coding agents as a Model Context
// Protocol (MCP) server, built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// The server has one tool, "execute" ([ToolName]). A call names a command,
// as an argv array or as a pipeline of argv arrays, and a reason; the server
// sends it to agent-sudod as one request (see package proto) and turns the
// answer into a text result for the model:
//
//   - the status, the request id and each stage's exit code;
//   - the final stage's stdout and every stage's stderr, as text when they
//     are valid UTF-8 and as base64 (with a note and the byte count) when
//     they are not; each is cut at [Config.MaxOutput] bytes with a
//     "(truncated: N more bytes)" marker, since the audit log keeps the
//     hashes of the full output;
//   - IsError is set when the request was denied, timed out or failed, and
//     when the final stage exited with a non-zero status, and the text then
//     carries the daemon's message.
//
// Nothing is run by this package: the daemon decides (by rule or through a
// human) and runs the command. Arguments are checked before anything is
// sent, so that a malformed call gets a tool error that tells the model how
// to fix it, never a request that a human has to read.
//
// # Waiting
//
// A human may take minutes to approve a request. While the answer is
// awaited, the server sends a progress notification every
// [Config.ProgressInterval] if the call carried a progress token. When the
// client cancels the call (notifications/cancelled), or the client goes
// away, the handler's context ends and the connection to the daemon is
// closed, which withdraws a request that is still waiting for approval: it
// never runs. A request that was already approved may still be running then;
// closing the connection does not stop it.
//
// # Transport
//
// [Serve] speaks MCP's stdio transport (one JSON-RPC message per line)
// through a connection of this package rather than the SDK's IOTransport,
// because of three behaviours of the SDK (v1.8.0) seen in its source:
//
//   - its reader is one json.Decoder over the whole stream, so the first
//     line that is not JSON ends the session without an answer; here each
//     line is decoded on its own, and a bad one is answered with -32700
//     (not JSON) or -32600 (not a JSON-RPC message) and skipped;
//   - once its reader reports the end of the input, jsonrpc2 cancels the
//     calls in progress and refuses to write any more replies, so their
//     answers are lost; here the end of the input is held back until each
//     call in progress has been cancelled (by a notifications/cancelled
//     made up for it, the only way to cancel one handler) and answered, and
//     Serve then returns a [CutOffError];
//   - it writes the reply of a call that the client cancelled; the MCP
//     specification says none is sent, so here that reply is dropped.
package mcpserver
