package audit

import (
	"context"
	"fmt"
	"strconv"

	"github.com/coreos/go-systemd/v22/journal"
)

// Daemon writes a daemon record, a start or a stop of the daemon (d.Event),
// and sends a journal entry with its hash. A stop's reason is kept to at
// most MaxDaemonReasonBytes. It returns once the record is durable: written
// and synced. An error means it is not; the journal entry then carries the
// error instead of the hash (docs/audit.md, "Daemon records").
//
// The daemon bounds ctx: a stop record must not hold up the shutdown.
func (l *Log) Daemon(ctx context.Context, d DaemonSection) (Receipt, error) {
	d.Reason = Bound(d.Reason, MaxDaemonReasonBytes)
	rec := &Record{Type: TypeDaemon, Daemon: &d}
	rcpt, err := l.Append(ctx, rec)
	fields := map[string]string{
		"AGENT_SUDO_DAEMON_EVENT": d.Event,
		"AGENT_SUDO_VERSION":      d.Version,
		"AGENT_SUDO_INSTANCE":     d.Instance,
	}
	msg := fmt.Sprintf("audit: daemon %s (version %s, pid %d)", d.Event, d.Version, d.PID)
	if d.Reason != "" {
		fields["AGENT_SUDO_REASON"] = d.Reason
		msg += ": " + journalText(d.Reason, maxJournalReason)
	}
	if d.Config != "" {
		fields["AGENT_SUDO_CONFIG"] = d.Config
	}
	fields["AGENT_SUDO_DAEMON_PID"] = strconv.Itoa(d.PID)
	l.journal(rec, rcpt, err, journal.PriNotice, msg, fields)
	return rcpt, err
}
