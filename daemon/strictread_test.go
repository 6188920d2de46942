package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestConsoleKeysAreExact: a decide whose "decision" is deny decides deny
// however another key that differs from it only in case or by Unicode
// folding says allow_once, and a "TYPE" after "type" does not change the
// message's type (issue 31, finding 7: encoding/json read each of these as
// the allow, and the command ran).
func TestConsoleKeysAreExact(t *testing.T) {
	for i, other := range []string{`"Decision"`, `"DECISION"`, `"deci\u017fion"`, `"deciſion"`, `"Decision"`} {
		id := "k" + string(rune('0'+i))
		b := newBroker(time.Hour, nil)
		r := askAsync(context.Background(), b, pending(id))
		c := serveConsole(context.Background(), t, b, "console")
		var p approval.Message
		for p.Type != approval.MsgPending {
			p = c.read()
		}
		if i == 4 {
			// The allow first, the deny after it: the exact key still
			// decides, whichever comes last.
			c.send(`{"type":"decide","id":"` + id + `","hash":"` + p.Hash + `",` + other + `:"deny","decision":"allow_once"}`)
			if res := c.readType(approval.MsgResult); !res.OK {
				t.Fatalf("%s before decision: answered %+v", other, res)
			}
			if got := <-r; got.err != nil || got.d.Verdict != approval.Allow {
				t.Fatalf("%s:\"deny\" before \"decision\":\"allow_once\": %+v %v, want allowed", other, got.d, got.err)
			}
			continue
		}
		c.send(`{"type":"decide","id":"` + id + `","hash":"` + p.Hash + `","decision":"deny",` + other + `:"allow_once"}`)
		if res := c.readType(approval.MsgResult); !res.OK {
			t.Fatalf("%s: answered %+v", other, res)
		}
		if got := <-r; got.err != nil || got.d.Verdict != approval.Deny {
			t.Fatalf("\"decision\":\"deny\",%s:\"allow_once\" decided %+v %v, want denied", other, got.d, got.err)
		}
	}

	b := newBroker(time.Hour, nil)
	r := askAsync(context.Background(), b, pending("t1"))
	c := serveConsole(context.Background(), t, b, "console")
	var p approval.Message
	for p.Type != approval.MsgPending {
		p = c.read()
	}
	c.send(`{"type":"revoke","grant":"g404","TYPE":"decide","id":"t1","hash":"` + p.Hash + `","decision":"allow_once"}`)
	if res := c.readType(approval.MsgResult); res.OK || !strings.Contains(res.Error, "g404") {
		t.Fatalf("revoke with a TYPE decide: answered %+v, want the revoke's error", res)
	}
	if b.Waiting() != 1 {
		t.Fatal("a revoke with \"TYPE\":\"decide\" decided the request")
	}
	c.sendMessage(approval.Message{Type: approval.MsgDecide, ID: "t1", Hash: p.Hash, Decision: approval.DenyOnce})
	if got := <-r; got.err != nil || got.d.Verdict != approval.Deny {
		t.Fatalf("deny: %+v %v", got.d, got.err)
	}
}

// signedLine is a decide line with a signed statement and assertion, each
// value written out so that a test can change one.
const signedLine = `{"type":"decide","id":"x","hash":"h","decision":"allow_once","signed":{` +
	`"statement":{"record":"r","id":"x","hash":"h","decision":"allow_once","scope":"once","expires":"2026-11-27T18:05:00Z","nonce":"bm9uY2Vub25jZW5vbmNlbg"},` +
	`"assertion":{"credential_id":"AQID","authenticator_data":"AQID","client_data":"AQID","signature":"AQID"}}}`

// TestDecodeConsoleLineStrict: the approver channel reads a console's line
// strictly at every depth (issue 31, findings 6 and 7): a key repeated
// inside signed.statement or signed.assertion, base64 with an escaped line
// break or nonzero unused bits, and a time that is not RFC 3339 (an offset
// of 24 hours, which no statement can be encoded with) are refused.
func TestDecodeConsoleLineStrict(t *testing.T) {
	if m, err := decodeConsoleLine([]byte(signedLine)); err != nil || m.Signed == nil || m.Signed.Statement.Decision != approval.AllowOnce {
		t.Fatalf("the unchanged line: %+v %v", m, err)
	}
	for _, tt := range []struct {
		name, old, new, want string
	}{
		{"statement decision twice", `"decision":"allow_once","scope"`, `"decision":"deny","decision":"allow_once","scope"`, `duplicate object member name "decision"`},
		{"statement expires twice", `"expires":"2026-11-27T18:05:00Z"`, `"expires":"2026-11-27T18:04:00Z","expires":"2026-11-27T18:05:00Z"`, `duplicate object member name "expires"`},
		{"assertion signature twice", `"signature":"AQID"`, `"signature":"BAUG","signature":"AQID"`, `duplicate object member name "signature"`},
		{"signed twice", `,"signed":{`, `,"signed":null,"signed":{`, `key "signed" appears more than once`},
		{"base64 escaped newline", `"client_data":"AQID"`, `"client_data":"AQ\nID"`, "line break"},
		{"base64 nonzero unused bits", `"signature":"AQID"`, `"signature":"AR=="`, "zero unused bits"},
		{"expires +24:00", `18:05:00Z`, `18:05:00+24:00`, "timezone hour out of range"},
		{"expires lower-case t", `2026-11-27T18`, `2026-11-27t18`, "parsing time"},
		{"expires comma", `18:05:00Z`, `18:05:00,5Z`, "parsing time"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			line := strings.Replace(signedLine, tt.old, tt.new, 1)
			if line == signedLine {
				t.Fatalf("%q is not in the line", tt.old)
			}
			m, err := decodeConsoleLine([]byte(line))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("decodeConsoleLine(%s) = %+v, %v; want an error with %q", line, m, err, tt.want)
			}
		})
	}
}

// readType returns the next message of type typ, skipping others (a
// decision's resolved and result race).
func (c *console) readType(typ string) approval.Message {
	c.t.Helper()
	for {
		if m := c.read(); m.Type == typ {
			return m
		}
	}
}
