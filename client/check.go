package client

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/proto"
)

// checkRequest refuses strings that are not valid UTF-8. encoding/json would
// silently turn each bad byte into U+FFFD, so the daemon would run, and the
// approver would see, an argv other than the one the caller gave. Everything
// else is the daemon's to judge: it knows the limits and says precisely what
// is wrong.
func checkRequest(r *proto.Request) error {
	bad := func(field string) error {
		return &proto.RequestError{Kind: proto.ErrInvalid, Field: field,
			Detail: "is not valid UTF-8; the protocol carries only UTF-8 text"}
	}
	for _, f := range []struct{ name, value string }{
		{"id", r.ID}, {"action", r.Action}, {"host", r.Host}, {"session", r.Session},
		{"reason", r.Reason}, {"cwd", r.Cwd},
	} {
		if !utf8.ValidString(f.value) {
			return bad(f.name)
		}
	}
	for i, stage := range r.Pipeline {
		for j, arg := range stage {
			if !utf8.ValidString(arg) {
				return bad(fmt.Sprintf("pipeline[%d][%d]", i, j))
			}
		}
	}
	for k, v := range r.Env {
		if !utf8.ValidString(k) {
			return bad("env")
		}
		if !utf8.ValidString(v) {
			return bad("env." + k)
		}
	}
	return nil
}

// checkResponse returns an error wrapping proto.ErrProtocol if resp cannot
// be the answer to req. proto.DecodeResponse has already checked the shape
// that does not depend on the request.
func checkResponse(req *proto.Request, resp *proto.Response) error {
	// An error response without an id is how the daemon answers a request
	// it could not read an id from; any other answer must echo ours, or it
	// may belong to another request.
	if resp.ID != req.ID && (resp.Status != proto.StatusError || resp.ID != "") {
		return fmt.Errorf("%w: response id %q does not match request id %q", proto.ErrProtocol, resp.ID, req.ID)
	}
	execute := req.Action == "" || req.Action == proto.ActionExecute
	switch {
	case resp.Stages == nil:
		if resp.Status == proto.StatusOK && execute {
			return fmt.Errorf("%w: ok response has no stages", proto.ErrProtocol)
		}
		return nil
	case !execute:
		return fmt.Errorf("%w: %s response to a %s request has stages", proto.ErrProtocol, resp.Status, req.Action)
	case resp.Status != proto.StatusOK && resp.Status != proto.StatusTimeout:
		// A denied request must not have run; an error response that says
		// stages ran contradicts itself. Either way the answer cannot be
		// trusted.
		return fmt.Errorf("%w: %s response has stages; only ok and timeout responses may", proto.ErrProtocol, resp.Status)
	case len(resp.Stages) != len(req.Pipeline):
		return fmt.Errorf("%w: %s response has %d stages for a pipeline of %d", proto.ErrProtocol, resp.Status, len(resp.Stages), len(req.Pipeline))
	}
	for i, st := range resp.Stages {
		if st.ExitCode < 0 || st.ExitCode > 255 {
			return fmt.Errorf("%w: stage %d has exit_code %d; exit codes are 0 to 255", proto.ErrProtocol, i, st.ExitCode)
		}
	}
	return nil
}

// RelativeArg returns the first argument of pipeline (a program's argv[0]
// excepted) that is a path relative to the working directory by its look:
// ".", "..", or one starting with "./" or "../"; ok is false when there is
// none. Such an argument means what it says only with a cwd: a request
// without one runs in "/". agent-sudo run and the MCP tool refuse it
// without a cwd rather than send their own working directory, which may
// not exist where the daemon is (another host, outside a container).
func RelativeArg(pipeline [][]string) (stage int, arg string, ok bool) {
	for i, argv := range pipeline {
		for _, a := range argv[min(1, len(argv)):] {
			if a == "." || a == ".." || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") {
				return i, a, true
			}
		}
	}
	return 0, "", false
}
