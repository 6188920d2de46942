package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/glob"
)

// rowFilter is the listing's selection.
type rowFilter struct {
	session, host, daemonHost *glob.Pattern
	// uid, when set, is the requester's uid the rows must have.
	uid          *uint32
	since, until time.Time
	status       map[string]bool
}

// selected returns the summaries f matches, in order.
func (f rowFilter) selected(all []*audit.Summary) []*audit.Summary {
	var rows []*audit.Summary
	for _, s := range all {
		if f.match(s) {
			rows = append(rows, s)
		}
	}
	return rows
}

// knownStatuses are the statuses --status accepts.
func knownStatuses() []string {
	return []string{"ok", "denied", "timeout", "error", audit.StatusWithdrawn, audit.StatusPending, audit.StatusRunning}
}

// compileFilter compiles a --session or --host pattern: the rules' glob
// syntax, so a filter means what a rule's session pattern means.
func compileFilter(pattern string) (*glob.Pattern, error) {
	g, err := glob.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return &g, nil
}

func newRowFilter(o *auditListOptions, deps auditDeps) (rowFilter, error) {
	var f rowFilter
	var err error
	if o.session != "" {
		if f.session, err = compileFilter(o.session); err != nil {
			return f, fmt.Errorf("--session: %w", err)
		}
	}
	if o.host != "" {
		if f.host, err = compileFilter(o.host); err != nil {
			return f, fmt.Errorf("--host: %w", err)
		}
	}
	if o.daemonHost != "" {
		if f.daemonHost, err = compileFilter(o.daemonHost); err != nil {
			return f, fmt.Errorf("--daemon-host: %w", err)
		}
	}
	if o.uid != "" {
		uid, err := parseUID(o.uid)
		if err != nil {
			return f, fmt.Errorf("--uid: %w", err)
		}
		f.uid = &uid
	}
	if o.since != "" {
		if f.since, err = parseWhen(o.since, deps); err != nil {
			return f, fmt.Errorf("--since: %w", err)
		}
	}
	if o.until != "" {
		if f.until, err = parseWhen(o.until, deps); err != nil {
			return f, fmt.Errorf("--until: %w", err)
		}
	}
	if !f.since.IsZero() && !f.until.IsZero() && !f.since.Before(f.until) {
		return f, fmt.Errorf("--since %s is not before --until %s", f.since.Format(time.RFC3339), f.until.Format(time.RFC3339))
	}
	if o.status != "" {
		f.status = map[string]bool{}
		for _, s := range strings.Split(o.status, ",") {
			if !slices.Contains(knownStatuses(), s) {
				return f, fmt.Errorf("--status %q: want one of %s (comma-separated)", s, strings.Join(knownStatuses(), ", "))
			}
			f.status[s] = true
		}
	}
	return f, nil
}

func (f rowFilter) match(s *audit.Summary) bool {
	switch {
	case f.session != nil && !f.session.Match(s.Session),
		f.host != nil && !f.host.Match(s.Host),
		f.daemonHost != nil && !f.daemonHost.Match(s.DaemonHost),
		f.uid != nil && (s.Peer == nil || s.Peer.UID != *f.uid),
		!f.since.IsZero() && s.Time.Before(f.since),
		!f.until.IsZero() && !s.Time.Before(f.until),
		f.status != nil && !f.status[s.Status]:
		return false
	}
	return true
}

// parseWhen reads a --since or --until value: a duration before now (with
// d for days), a date (midnight, local time), or an RFC 3339 time.
func parseWhen(v string, deps auditDeps) (time.Time, error) {
	if d, ok := parseAgo(v); ok {
		return deps.now().Add(-d), nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, deps.loc); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a duration ago (2h, 90m, 7d), a date (2026-11-20) or an RFC 3339 time (2026-11-20T14:30:00Z)", v)
}

// parseAgo reads a non-negative duration, allowing a leading number of
// days: "7d", "1d12h", "2h".
func parseAgo(v string) (time.Duration, bool) {
	var days int64
	if i := strings.IndexByte(v, 'd'); i > 0 {
		n, err := strconv.ParseInt(v[:i], 10, 32)
		if err != nil || n < 0 {
			return 0, false
		}
		days, v = n, v[i+1:]
	}
	var d time.Duration
	if v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 || v[0] == '+' {
			return 0, false
		}
	} else if days == 0 {
		return 0, false
	}
	return d + time.Duration(days)*24*time.Hour, true
}
