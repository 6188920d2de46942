package audit

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/journalctl"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// hostEntries returns the journal entries a daemon's log sent to j, as a
// central journal holds them after systemd-journal-upload carried them
// from host: with the host's _HOSTNAME and _MACHINE_ID, root's _UID (the
// daemon's), SYSLOG_IDENTIFIER and MESSAGE.
func hostEntries(j *fakeJournal, host string, machine int, firstUS int64) []map[string]string {
	var out []map[string]string
	for i, e := range j.sent() {
		m := map[string]string{
			"__REALTIME_TIMESTAMP": strconv.FormatInt(firstUS+int64(i)*1000, 10),
			"_HOSTNAME":            host,
			"_MACHINE_ID":          fmt.Sprintf("%032x", machine),
			"_UID":                 "0",
			"MESSAGE":              e.msg,
			"PRIORITY":             strconv.Itoa(int(e.pri)),
		}
		for k, v := range e.fields {
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// joinJournal reads src and joins its entries, failing the test on any
// error.
func joinJournal(t *testing.T, src JournalSource) []*Summary {
	t.Helper()
	j := NewJournalJoiner()
	var all []*Summary
	for e, err := range ReadJournal(context.Background(), src, journalctl.Start) {
		if err != nil {
			t.Fatalf("ReadJournal: %v", err)
		}
		if s, created, _ := j.Add(e); created {
			all = append(all, s)
		}
	}
	return all
}

// TestJournalCarriesTheListing: the journal entries a daemon sends carry
// what the listing shows of each request (its id, session, host, peer uid,
// status, decider, exit codes, duration and command), so that a central
// journal fed by systemd-journal-upload lists the same requests as the
// hosts' own logs, each under the host that sent it (_HOSTNAME). Two
// hosts use the same request id and stay two requests; entries of the
// daemon that are no request's (opened, closed, its own log lines) and
// other programs' entries are left out. The journal is a real one, written
// by systemd-journal-remote from export data and read with journalctl.
func TestJournalCarriesTheListing(t *testing.T) {
	testenv.NeedsJournal(t)
	ctx := context.Background()
	dir := t.TempDir()
	var want []*Summary
	for i, host := range []string{"host-a", "host-b"} {
		j := &fakeJournal{}
		path := logPath(t)
		l := openLog(t, path, Options{Journal: j})
		fullRequest(t, l, "r-same")
		tr, err := l.Received(ctx, testRequest("r-denied-"+host), testPeer)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Deny, By: "console uid=0 tty=/dev/pts/3 pid=99", Message: "no"}); err != nil {
			t.Fatal(err)
		}
		if err := l.Refused(ctx, Refusal{ID: "r-refused-" + host, Request: testRequest("r-refused-" + host), Peer: &peercred.Creds{UID: 1001, PID: 7}, Reason: "replay"}); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// What the host's own log lists, the reference.
		jn := NewJoiner()
		for e, err := range Read(ctx, path) {
			if err != nil {
				t.Fatal(err)
			}
			if s, created, _ := jn.Add(e); created {
				want = append(want, s)
			}
		}
		entries := hostEntries(j, host, i+1, 1_800_000_000_000_000+int64(i)*10_000_000)
		// The daemon's own log lines, and another program's entry with
		// the same fields, are no audit entries.
		entries = append(entries,
			map[string]string{"__REALTIME_TIMESTAMP": "1800000100000000", "_HOSTNAME": host, "_UID": "0", "SYSLOG_IDENTIFIER": "agent-sudod", "MESSAGE": "listening"},
			map[string]string{"__REALTIME_TIMESTAMP": "1800000100000001", "_HOSTNAME": host, "SYSLOG_IDENTIFIER": "other",
				"AGENT_SUDO_AUDIT_TYPE": "decision", "AGENT_SUDO_ID": "r-forged"})
		testenv.WriteJournal(t, dir, "remote-"+host+".journal", entries)
	}
	got := joinJournal(t, JournalSource{Dir: dir})
	if len(got) != len(want) {
		t.Fatalf("the journal lists %d requests, the logs %d: %v", len(got), len(want), got)
	}
	// The journal orders by time; the logs were read host by host, and
	// host-b's entries are all later.
	hosts := []string{"host-a", "host-a", "host-a", "host-b", "host-b", "host-b"}
	for i, g := range got {
		w := want[i]
		if g.DaemonHost != hosts[i] {
			t.Errorf("row %d: host %q, want %q (the _HOSTNAME of its entries)", i, g.DaemonHost, hosts[i])
		}
		if g.File != w.File {
			t.Errorf("row %d: log %q, want %q", i, g.File, w.File)
		}
		type shown struct {
			ID, Session, Host, Status, Verdict, DecidedBy string
			UID                                           uint32
			ExitCodes                                     []int
			Duration                                      string
			Pipeline                                      [][]string
		}
		view := func(s *Summary) shown {
			return shown{s.ID, s.Session, s.Host, s.Status, s.Verdict, s.DecidedBy, s.Peer.UID, s.ExitCodes, s.Duration.String(), s.Pipeline()}
		}
		if !reflect.DeepEqual(view(g), view(w)) {
			t.Errorf("row %d from the journal:\n%+v\nfrom the log:\n%+v", i, view(g), view(w))
		}
		// The journal has no entry when a request arrives: a row's time is
		// that of its first entry, the decision or the refusal.
		if g.Time.Before(w.Time) {
			t.Errorf("row %d: time %v before the request's %v", i, g.Time, w.Time)
		}
	}
	if got[0].Ref == "" || got[0].Ref != want[0].Ref {
		t.Errorf("the journal's ref %q, want the request record's hash %q", got[0].Ref, want[0].Ref)
	}

	// The files of one host, by name (a glob, as journalctl takes it).
	one := joinJournal(t, JournalSource{Files: []string{filepath.Join(dir, "remote-host-b*.journal")}})
	if len(one) != 3 || one[0].DaemonHost != "host-b" {
		t.Errorf("host-b's file lists %d requests (%v), want its 3", len(one), one)
	}
}

// TestJournalEntriesOfOlderDaemons: entries without AGENT_SUDO_REF and
// AGENT_SUDO_PIPELINE (daemons from before they were sent) still join by
// id, and a row without a command has none rather than another's.
func TestJournalEntriesOfOlderDaemons(t *testing.T) {
	testenv.NeedsJournal(t)
	dir := t.TempDir()
	e := func(us int, typ, id string, kv ...string) map[string]string {
		m := map[string]string{"__REALTIME_TIMESTAMP": strconv.Itoa(1_800_000_000_000_000 + us), "_HOSTNAME": "old", "_UID": "0", "SYSLOG_IDENTIFIER": "agent-sudod",
			"AGENT_SUDO_AUDIT_TYPE": typ, "AGENT_SUDO_ID": id, "AGENT_SUDO_AUDIT_LOG": "/var/log/agent-sudo/audit.jsonl"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	testenv.WriteJournal(t, dir, "x.journal", []map[string]string{
		e(1, "decision", "r1", "AGENT_SUDO_VERDICT", "allowed", "AGENT_SUDO_DECIDED_BY", "rule"),
		e(2, "decision", "r2", "AGENT_SUDO_VERDICT", "denied", "AGENT_SUDO_DECIDED_BY", "rule"),
		e(3, "result", "r1", "AGENT_SUDO_STATUS", "ok", "AGENT_SUDO_EXIT_CODES", "0,1"),
	})
	got := joinJournal(t, JournalSource{Dir: dir})
	if len(got) != 2 {
		t.Fatalf("%d rows, want 2: %v", len(got), got)
	}
	if got[0].ID != "r1" || got[0].Status != "ok" || !reflect.DeepEqual(got[0].ExitCodes, []int{0, 1}) || got[0].Ref != "" {
		t.Errorf("r1: %+v, want ok with exit codes 0,1 and no ref", got[0])
	}
	if got[1].ID != "r2" || got[1].Status != "denied" || got[1].Pipeline() != nil {
		t.Errorf("r2: %+v, want denied without a command", got[1])
	}
}

// TestReadJournalFailures: journalctl missing, or failing (a directory
// that does not exist), ends the reading with an error that says so.
func TestReadJournalFailures(t *testing.T) {
	ctx := context.Background()
	for _, err := range ReadJournal(ctx, JournalSource{Dir: t.TempDir(), Journalctl: filepath.Join(t.TempDir(), "journalctl")}, journalctl.Start) {
		if !errors.Is(err, journalctl.ErrNotFound) && (err == nil || !strings.Contains(err.Error(), "no such file")) {
			t.Errorf("a missing journalctl: %v", err)
		}
		break
	}
	testenv.NeedsJournal(t)
	missing := filepath.Join(t.TempDir(), "nothing-here")
	n := 0
	for _, err := range ReadJournal(ctx, JournalSource{Dir: missing}, journalctl.Start) {
		n++
		if err == nil || !strings.Contains(err.Error(), "journalctl failed") || !strings.Contains(err.Error(), missing) {
			t.Errorf("a missing directory: %v, want journalctl's failure naming it", err)
		}
	}
	if n != 1 {
		t.Errorf("a missing directory yielded %d times, want one error", n)
	}
}

// TestParseJournalEntry: journalctl's JSON values (a string, bytes as an
// array of numbers, null) are read; a field the entry has twice, which a
// sender can forge to show one value and be filtered on by another, makes
// the entry unreadable rather than picking one.
func TestParseJournalEntry(t *testing.T) {
	e, err := parseJournalEntry([]byte(`{"__REALTIME_TIMESTAMP":"1800000000000000","_HOSTNAME":"h","AGENT_SUDO_SESSION":[115,27,91,50,74],"AGENT_SUDO_ID":"r1","MESSAGE":null,"OTHER":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Fields["AGENT_SUDO_SESSION"] != "s\x1b[2J" || e.Hostname != "h" || e.Fields["AGENT_SUDO_ID"] != "r1" || e.Time.UnixMicro() != 1_800_000_000_000_000 {
		t.Errorf("parsed %+v", e)
	}
	if _, ok := e.Fields["MESSAGE"]; ok {
		t.Error("a null field was kept")
	}
	if _, ok := e.Fields["OTHER"]; ok {
		t.Error("a field that is no audit field was kept")
	}
	for _, bad := range []string{
		`{"__REALTIME_TIMESTAMP":"1800000000000000","AGENT_SUDO_ID":["r1","r2"]}`,
		`{"__REALTIME_TIMESTAMP":"1800000000000000","AGENT_SUDO_ID":[[1],[2]]}`,
		`{"__REALTIME_TIMESTAMP":"1800000000000000","AGENT_SUDO_ID":[300]}`,
		`{"AGENT_SUDO_ID":"r1"}`,
		`{"__REALTIME_TIMESTAMP":"soon"}`,
		`[1]`,
	} {
		if _, err := parseJournalEntry([]byte(bad)); err == nil {
			t.Errorf("parseJournalEntry(%s) succeeded", bad)
		}
	}
}

// TestReadJournalBadEntryIsSkipped: an entry journalctl prints that cannot
// be read (a repeated field, or over 1 MiB) is reported with its number,
// and the entries after it are still read, the last one too when its
// newline is missing. journalctl is a stand-in script here, printing what a real one
// cannot be made to print from export data.
func TestReadJournalBadEntryIsSkipped(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "journalctl")
	testenv.WriteExecutable(t, prog, []byte("#!/bin/sh\n"+
		`printf '%s\n' '{"__REALTIME_TIMESTAMP":"1","AGENT_SUDO_ID":["a","b"]}' '{"__REALTIME_TIMESTAMP":"2","AGENT_SUDO_ID":"r2"}'`+"\n"+
		// An entry over the bound, then one cut short of its newline.
		`printf '{"__REALTIME_TIMESTAMP":"3","AGENT_SUDO_ID":"%s"}\n' "$(head -c 1100000 /dev/zero | tr '\0' x)"`+"\n"+
		`printf '%s' '{"__REALTIME_TIMESTAMP":"4","AGENT_SUDO_ID":"r4"}'`+"\n"))
	var ids []string
	var bad []int
	for e, err := range ReadJournal(context.Background(), JournalSource{Dir: "/nonexistent", Journalctl: prog}, journalctl.Start) {
		var je *JournalEntryError
		switch {
		case errors.As(err, &je):
			bad = append(bad, je.N)
		case err != nil:
			t.Fatal(err)
		default:
			ids = append(ids, e.Fields["AGENT_SUDO_ID"])
		}
	}
	if !reflect.DeepEqual(ids, []string{"r2", "r4"}) || !reflect.DeepEqual(bad, []int{1, 3}) {
		t.Errorf("read ids %q and bad entries %v, want [r2 r4] and [1 3]", ids, bad)
	}
}
