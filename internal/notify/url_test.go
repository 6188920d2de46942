package notify

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestURLPlaceholder: {url} is the web approver's address and the
// request's id, query-escaped, so an id the agent chose cannot change the
// path, add a query parameter or a fragment, or break out of a header
// line; it is empty without web_approver_url, and drops an id too long to
// fit rather than cut it.
func TestURLPlaceholder(t *testing.T) {
	v := Values{Request: &approval.Shown{ID: "a b&admin=1#x/../y\r\nX-Evil: 1"}, WebApprover: "https://box.example:8443"}
	got := v.escaped()["url"]
	want := "https://box.example:8443/?id=a+b%26admin%3D1%23x%2F..%2Fy%0D%0AX-Evil%3A+1"
	if got != want {
		t.Fatalf("{url} = %q, want %q", got, want)
	}
	if (Values{Request: &approval.Shown{ID: "x"}}).escaped()["url"] != "" {
		t.Fatal("{url} is not empty without web_approver_url")
	}
	long := Values{Request: &approval.Shown{ID: strings.Repeat("i", 2*MaxValue)}, WebApprover: "https://box.example"}.escaped()["url"]
	if long != "https://box.example/" {
		t.Fatalf("{url} of a too long id = %q, want the address alone", long)
	}
}
