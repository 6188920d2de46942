package mcpserver

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/proto"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// formatResult turns the daemon's answer to req into the tool result the
// model reads. max caps each stream; see [Config.MaxOutput].
func formatResult(req *proto.Request, resp *proto.Response, max int) *mcp.CallToolResult {
	var b strings.Builder
	isError := true
	ran := resp.Stages != nil
	switch resp.Status {
	case proto.StatusOK:
		b.WriteString("status: ok (the command ran)\n")
		// The client has checked that an ok answer has one stage per
		// pipeline stage, and a pipeline is never empty.
		isError = len(resp.Stages) > 0 && resp.Stages[len(resp.Stages)-1].ExitCode != 0
	case proto.StatusDenied:
		b.WriteString("status: denied (the command did not run)\n")
	case proto.StatusTimeout:
		if ran {
			b.WriteString("status: timeout (the command ran past the daemon's command_timeout and was killed; its output is incomplete)\n")
		} else {
			b.WriteString("status: timeout (nobody approved the request in time; the command did not run)\n")
		}
	default:
		b.WriteString("status: error (agent-sudod refused the request or could not run it)\n")
	}
	if resp.Message != "" {
		fmt.Fprintf(&b, "message: %s\n", text(resp.Message))
	}
	fmt.Fprintf(&b, "request id: %s\n", text(resp.ID))
	if ran {
		writeExitCodes(&b, req, resp)
		writeStream(&b, "stdout", resp.Stdout, resp.StdoutTruncated, max)
		for i, st := range resp.Stages {
			name := "stderr"
			if len(resp.Stages) > 1 {
				name = fmt.Sprintf("stderr of stage %d (%s)", i+1, program(req, i))
			}
			writeStream(&b, name, st.Stderr, st.StderrTruncated, max)
		}
	}
	switch resp.Status {
	case proto.StatusDenied:
		b.WriteString("Do not send the same command again: change it, or ask the user.\n")
	case proto.StatusTimeout:
		if !ran {
			b.WriteString("Ask the user to approve it (agent-sudo approve) before retrying.\n")
		}
	}
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
}

// writeExitCodes writes the exit status line: one code for one stage, one
// per stage for a pipeline.
func writeExitCodes(b *strings.Builder, req *proto.Request, resp *proto.Response) {
	if len(resp.Stages) == 1 {
		fmt.Fprintf(b, "exit code: %d\n", resp.Stages[0].ExitCode)
		return
	}
	b.WriteString("exit codes:")
	for i, st := range resp.Stages {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, " stage %d (%s) %d", i+1, program(req, i), st.ExitCode)
	}
	b.WriteString(" (the last stage's is the pipeline's)\n")
}

// writeStream writes one output stream under a heading: as text when it is
// valid UTF-8, as base64 otherwise, cut at max bytes of output.
func writeStream(b *strings.Builder, name string, out []byte, daemonCut bool, max int) {
	if len(out) == 0 && !daemonCut {
		fmt.Fprintf(b, "%s: (empty)\n", name)
		return
	}
	shown := out
	if len(shown) > max {
		cut := max
		// Do not split a character: back up to the start of the one the
		// cut falls in (at most 3 bytes, or none for binary data).
		for i := 0; i < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(out[cut]); i++ {
			cut--
		}
		shown = out[:cut]
	}
	if utf8.Valid(shown) {
		fmt.Fprintf(b, "%s (%d bytes):\n%s", name, len(out), shown)
		if len(shown) > 0 && shown[len(shown)-1] != '\n' {
			b.WriteString("\n")
		}
	} else {
		// base64 is 4/3 as long as its input: show less, so that what the
		// model reads stays about max bytes.
		if len(shown) > max/4*3 {
			shown = shown[:max/4*3]
		}
		fmt.Fprintf(b, "%s (%d bytes, not valid UTF-8 text, shown as base64):\n%s\n", name, len(out), base64.StdEncoding.EncodeToString(shown))
	}
	if more := len(out) - len(shown); more > 0 {
		fmt.Fprintf(b, "(truncated: %d more bytes)\n", more)
	}
	if daemonCut {
		fmt.Fprintf(b, "(the daemon kept only the first %d MiB of %s)\n", proto.MaxOutputBytes>>20, name)
	}
}

// program names stage i of req for a heading.
func program(req *proto.Request, i int) string {
	if i >= len(req.Pipeline) || len(req.Pipeline[i]) == 0 {
		return "?"
	}
	return text(filepath.Base(req.Pipeline[i][0]))
}

// text makes a string from the daemon or the request safe to embed: the
// model reads text, not a terminal, but the result must be valid UTF-8.
func text(s string) string {
	return strings.ToValidUTF8(s, "\uFFFD")
}
