package proto_test

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/proto"
)

// TestProgressLines: progress lines written by WriteProgress are read back
// by ReadProgressOrResponse before the response, which follows them on the
// same reader; a value the client does not know is read (and Describe says
// nothing of it); a line longer than the buffer, or cut off, is a protocol
// error (docs/protocol.md, "Progress").
func TestProgressLines(t *testing.T) {
	deadline := time.Date(2026, 11, 27, 16, 5, 0, 0, time.UTC)
	var b bytes.Buffer
	for _, p := range []proto.Progress{
		{Progress: proto.ProgressWaiting, ID: "p1", Consoles: 0, Deadline: deadline},
		{Progress: "thinking", ID: "p1"},
		{Progress: proto.ProgressRunning, ID: "p1"},
	} {
		if err := proto.WriteProgress(&b, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := proto.WriteResponse(&b, &proto.Response{ID: "p1", Status: proto.StatusOK, Stages: []proto.Stage{{}}}); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(&b, proto.MaxProgressBytes)
	var got []string
	for {
		p, resp, err := proto.ReadProgressOrResponse(r)
		if err != nil {
			t.Fatal(err)
		}
		if resp != nil {
			if resp.ID != "p1" || resp.Status != proto.StatusOK {
				t.Errorf("response %+v", resp)
			}
			break
		}
		got = append(got, p.Progress+":"+p.Describe(deadline.Add(-time.Minute)))
	}
	want := []string{
		"waiting:request p1 waits for a human's approval, and no approver console or web approver is connected; it times out in 1m0s unless someone runs 'sudo agent-sudo approve'",
		"thinking:",
		"running:request p1 was allowed; its command is running",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	for name, in := range map[string]string{
		"too long": `{"progress":"waiting","id":"` + strings.Repeat("x", proto.MaxProgressBytes) + `"}` + "\n",
		"cut off":  `{"progress":"waiting","id":"p1"`,
		"not JSON": `{"progress":` + "\n",
	} {
		if _, _, err := proto.ReadProgressOrResponse(bufio.NewReaderSize(strings.NewReader(in), proto.MaxProgressBytes)); !errors.Is(err, proto.ErrProtocol) {
			t.Errorf("%s: %v, want a protocol error", name, err)
		}
	}
}
