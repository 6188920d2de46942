package audit

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"
)

// testRun is a daemon run as agent-sudod describes it in its records.
var testRun = DaemonSection{Version: "1.2.3", PID: 4321, Config: "/etc/agent-sudo/config.toml", Instance: "INSTANCE7"}

// daemonEvent returns testRun with event and reason.
func daemonEvent(event, reason string) DaemonSection {
	d := testRun
	d.Event, d.Reason = event, reason
	return d
}

// TestDaemonRecordRoundTrip: a daemon's start and stop records are written
// into the chain between requests' records, read back as they were written
// (event, reason, version, pid, config, instance, daemon_host, no request
// fields), and each is sent to the journal with its hash and no request
// fields; the chain over them verifies, and an edit of a daemon record is
// found like an edit of any other record (docs/audit.md, "Daemon
// records").
func TestDaemonRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := logPath(t)
	j := &fakeJournal{}
	l := openLog(t, path, Options{Journal: j, DaemonHost: "daemon-host"})
	const why = "the terminal of agent-sudod --tty hung up, which stops the daemon"
	startRcpt, err := l.Daemon(ctx, daemonEvent(DaemonStarted, ""))
	if err != nil {
		t.Fatalf("Daemon(started): %v", err)
	}
	fullRequest(t, l, "r1")
	stopRcpt, err := l.Daemon(ctx, daemonEvent(DaemonStopped, why))
	if err != nil {
		t.Fatalf("Daemon(stopped): %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ls := lines(t, path)
	if len(ls) != 6 {
		t.Fatalf("%d lines, want 6 (start, the request's 4, stop)", len(ls))
	}
	if got := LineHash(ls[0]); got != startRcpt.Hash || startRcpt.Seq != 1 {
		t.Errorf("start receipt %+v; line 1 has hash %s", startRcpt, got)
	}
	if got := LineHash(ls[5]); got != stopRcpt.Hash || stopRcpt.Seq != 6 {
		t.Errorf("stop receipt %+v; line 6 has hash %s", stopRcpt, got)
	}
	wantStop := `{"type":"daemon","time":"2026-11-20T09:30:06Z","id":"","session":"","host":"","daemon_host":"daemon-host",` +
		`"daemon":{"event":"stopped","reason":"` + why + `","version":"1.2.3","pid":4321,"config":"/etc/agent-sudo/config.toml","instance":"INSTANCE7"},` +
		`"seq":6,"prev":"` + LineHash(ls[4]) + `"}`
	if string(ls[5]) != wantStop {
		t.Errorf("the stop record is\n%s\nwant\n%s", ls[5], wantStop)
	}

	var got []*Record
	for e, err := range Read(ctx, path) {
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		got = append(got, e.Record)
	}
	for i, want := range map[int]DaemonSection{0: daemonEvent(DaemonStarted, ""), 5: daemonEvent(DaemonStopped, why)} {
		r := got[i]
		if r.Type != TypeDaemon || r.Daemon == nil || !reflect.DeepEqual(*r.Daemon, want) {
			t.Errorf("record %d read back as %s %+v, want daemon %+v", i+1, r.Type, r.Daemon, want)
		}
		if r.ID != "" || r.Session != "" || r.Host != "" || r.Peer != nil || r.Ref != "" || r.DaemonHost != "daemon-host" ||
			r.Request != nil || r.Decision != nil || r.Exec != nil || r.Result != nil {
			t.Errorf("record %d has other fields than a daemon record's: %+v", i+1, r)
		}
	}

	res, err := Verify(ctx, path)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if res.Records != 6 || res.Head != stopRcpt.Hash {
		t.Errorf("Verify = %+v; want 6 records ending at the stop record %s", res, stopRcpt.Hash)
	}
	edited := make([][]byte, len(ls))
	copy(edited, ls)
	edited[0] = []byte(strings.Replace(string(ls[0]), `"pid":4321`, `"pid":4322`, 1))
	writeLines(t, path, edited)
	var ce *ChainError
	if _, err := Verify(ctx, path); !errors.As(err, &ce) || ce.Line != 1 || !strings.Contains(ce.Problem, "altered") {
		t.Errorf("Verify of a log whose start record was edited: %v; want line 1 altered", err)
	}

	var daemonEntries []journalEntry
	for _, e := range j.sent() {
		if e.fields["AGENT_SUDO_AUDIT_TYPE"] == "daemon" {
			daemonEntries = append(daemonEntries, e)
		}
	}
	if len(daemonEntries) != 2 {
		t.Fatalf("%d journal entries of daemon records, want 2: %+v", len(daemonEntries), j.sent())
	}
	for i, w := range []struct {
		rcpt          Receipt
		event, reason string
	}{{startRcpt, "started", ""}, {stopRcpt, "stopped", why}} {
		f := daemonEntries[i].fields
		want := map[string]string{"AGENT_SUDO_DAEMON_EVENT": w.event, "AGENT_SUDO_REASON": w.reason,
			"AGENT_SUDO_RECORD_HASH": w.rcpt.Hash, "AGENT_SUDO_VERSION": "1.2.3", "AGENT_SUDO_DAEMON_PID": "4321",
			"AGENT_SUDO_INSTANCE": "INSTANCE7", "AGENT_SUDO_CONFIG": "/etc/agent-sudo/config.toml", "SYSLOG_IDENTIFIER": "agent-sudod"}
		for k, v := range want {
			if f[k] != v {
				t.Errorf("journal entry of the %s record: %s = %q, want %q", w.event, k, f[k], v)
			}
		}
		for _, k := range []string{"AGENT_SUDO_ID", "AGENT_SUDO_SESSION", "AGENT_SUDO_HOST", "AGENT_SUDO_PEER_UID"} {
			if v, ok := f[k]; ok {
				t.Errorf("journal entry of the %s record has the request field %s=%q", w.event, k, v)
			}
		}
		if !strings.Contains(daemonEntries[i].msg, "daemon "+w.event) || !strings.Contains(daemonEntries[i].msg, w.reason) {
			t.Errorf("journal message %q does not say the daemon %s (%s)", daemonEntries[i].msg, w.event, w.reason)
		}
	}
}

// TestDaemonRecordRefused: what is not a daemon record is refused before
// it is written, naming what is wrong, and the log is unchanged.
func TestDaemonRecordRefused(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		rec  *Record
		want string
	}{
		{"unknown event", &Record{Type: TypeDaemon, Daemon: &DaemonSection{Event: "paused"}}, `event "paused" is neither "started" nor "stopped"`},
		{"stop without a reason", &Record{Type: TypeDaemon, Daemon: &DaemonSection{Event: DaemonStopped}}, "a stop has no reason"},
		{"start with a reason", &Record{Type: TypeDaemon, Daemon: &DaemonSection{Event: DaemonStarted, Reason: "x"}}, "a start has a reason"},
		{"with a request id", &Record{Type: TypeDaemon, ID: "r1", Daemon: &DaemonSection{Event: DaemonStarted}}, "has a request's id"},
		{"with a peer", &Record{Type: TypeDaemon, Peer: &Peer{UID: 1}, Daemon: &DaemonSection{Event: DaemonStarted}}, "has a request's id"},
		{"no section", &Record{Type: TypeDaemon}, "daemon record has no daemon section"},
		{"request with a daemon section", &Record{Type: TypeRequest, Request: &RequestSection{}, Daemon: &DaemonSection{Event: DaemonStarted}},
			"request record has a daemon section"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := logPath(t)
			l := openLog(t, path, Options{})
			_, err := l.Append(ctx, tt.rec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Append = %v, want an error saying %q", err, tt.want)
			}
			if b, _ := os.ReadFile(path); len(b) != 0 {
				t.Errorf("the refused record was written: %s", b)
			}
		})
	}
}

// TestDaemonRecordReasonBounded: a stop's reason (an error's text, which
// may quote anything) is cut to MaxDaemonReasonBytes, saying how long it
// was.
func TestDaemonRecordReasonBounded(t *testing.T) {
	path := logPath(t)
	l := openLog(t, path, Options{})
	long := strings.Repeat("x", 100_000)
	if _, err := l.Daemon(context.Background(), daemonEvent(DaemonStopped, "error: "+long)); err != nil {
		t.Fatal(err)
	}
	ls := lines(t, path)
	rec, err := parseRecord(ls[0])
	if err != nil {
		t.Fatal(err)
	}
	if r := rec.Daemon.Reason; len(r) > MaxDaemonReasonBytes+64 || !strings.HasSuffix(r, "(cut: 100007 bytes in all)") {
		t.Errorf("the reason kept is %d bytes, ending %q; want at most about %d, saying it was cut", len(r), r[max(0, len(r)-40):], MaxDaemonReasonBytes)
	}
}

// TestDaemonJournalMessageEscaped: a stop's reason (an error, which can
// quote a path an agent chose) is escaped and bounded in the journal's
// message, as every record's message is; the field keeps it whole.
func TestDaemonJournalMessageEscaped(t *testing.T) {
	var msg, field string
	l := openLog(t, logPath(t), Options{Journal: JournalFunc(func(m string, _ journal.Priority, f map[string]string) error {
		msg, field = m, f["AGENT_SUDO_REASON"]
		return nil
	})})
	reason := "error: listen /tmp/\x1b[2Jx: " + strings.Repeat("y", 1000)
	if _, err := l.Daemon(context.Background(), daemonEvent(DaemonStopped, reason)); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(msg, 0x1b) || len(msg) > 400 {
		t.Errorf("journal message %q: want the reason escaped and bounded", msg)
	}
	if field != reason {
		t.Errorf("AGENT_SUDO_REASON = %q, want the reason whole", field)
	}
}

// TestJoinerSkipsDaemonRecords: the listing (Joiner) makes no row of a
// daemon record, nor of a record of a type this version does not know,
// and a request around them is joined as before. Before daemon records,
// the first one made a "pending" row with an empty id.
func TestJoinerSkipsDaemonRecords(t *testing.T) {
	path := logPath(t)
	l := openLog(t, path, Options{})
	fullRequest(t, l, "r1")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ls := lines(t, path)
	// Written as raw lines (chain fields included), as a daemon or a later
	// version would: the Joiner does not look at the chain.
	start := []byte(`{"type":"daemon","time":"2026-11-20T09:30:00Z","id":"","session":"","host":"","daemon":{"event":"started","version":"1","pid":1},"seq":1,"prev":"` + Genesis + `"}`)
	future := []byte(`{"type":"maintenance","time":"2026-11-20T09:30:00Z","id":"","session":"","host":"","seq":2,"prev":"` + Genesis + `"}`)
	stop := []byte(`{"type":"daemon","time":"2026-11-20T09:40:00Z","id":"","session":"","host":"","daemon":{"event":"stopped","reason":"terminated signal received","version":"1","pid":1},"seq":7,"prev":"` + Genesis + `"}`)
	all := append([][]byte{start, future, ls[0], ls[1]}, stop, ls[2], ls[3])
	j := NewJoiner()
	var rows []*Summary
	for i, line := range all {
		e, err := makeEntry(path, i+1, line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		s, created, _ := j.Add(e)
		if created {
			rows = append(rows, s)
		}
		if e.Record.Type != TypeRequest && e.Record.Ref == "" && s != nil {
			t.Errorf("line %d (%s) was joined to request %q", i+1, e.Record.Type, s.ID)
		}
	}
	if len(rows) != 1 || rows[0].ID != "r1" || rows[0].Status != "ok" {
		var got []string
		for _, s := range rows {
			got = append(got, s.ID+" "+s.Status)
		}
		t.Errorf("rows %q; want one, r1 ok", got)
	}
}
