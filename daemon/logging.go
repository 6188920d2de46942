package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/agent-sudo/agent-sudo/internal/fsperm"
)

// NewLogger returns the daemon's logger: structured entries in the systemd
// journal when one is running, so that `journalctl AGENT_SUDO_SESSION=x`
// works, and text lines on w otherwise.
func NewLogger(w io.Writer) *slog.Logger {
	if journal.Enabled() {
		return slog.New(&journalHandler{level: slog.LevelInfo})
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// journalHandler sends each record to journald with every attribute as a
// field named AGENT_SUDO_<KEY>.
type journalHandler struct {
	level slog.Level
	attrs []slog.Attr
	group string
}

func (h *journalHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *journalHandler) Handle(_ context.Context, r slog.Record) error {
	vars := map[string]string{"SYSLOG_IDENTIFIER": "agent-sudod"}
	add := func(a slog.Attr) {
		vars[journalField(h.group, a.Key)] = a.Value.String()
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(func(a slog.Attr) bool { add(a); return true })
	return journal.Send(r.Message, journalPriority(r.Level), vars)
}

func (h *journalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &n
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	n := *h
	n.group = strings.TrimPrefix(n.group+"_"+name, "_")
	return &n
}

// journalField maps an attribute key to a journald field name, which may
// hold only upper-case letters, digits and underscores.
func journalField(group, key string) string {
	var b strings.Builder
	b.WriteString("AGENT_SUDO_")
	if group != "" {
		key = group + "_" + key
	}
	for _, r := range strings.ToUpper(key) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func journalPriority(l slog.Level) journal.Priority {
	switch {
	case l >= slog.LevelError:
		return journal.PriErr
	case l >= slog.LevelWarn:
		return journal.PriWarning
	case l >= slog.LevelInfo:
		return journal.PriInfo
	}
	return journal.PriDebug
}

// OpenLogFile opens the daemon's log file at path for appending, creating
// it (mode 0600) and its directory (mode 0755) if needed. It refuses what an
// agent could have planted: a directory that CheckSecureDir refuses, a
// symbolic link at path (the file is opened with O_NOFOLLOW), anything
// that is not a regular file, a file with more than one link, and a file
// owned by another user or writable by group or others ([fsperm.OwnFile]).
func OpenLogFile(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("log file %s: create directory: %w", path, err)
	}
	if err := fsperm.SecureDir(dir, "log directory"); err != nil {
		return nil, fmt.Errorf("log file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("log file %s is a symbolic link; refusing to follow it (remove it, or give another path)", path)
		}
		return nil, fmt.Errorf("log file %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = fsperm.OwnFile("the file", fi, "whoever can write it can forge or erase what the daemon logs")
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("log file %s: %w", path, err)
	}
	return f, nil
}
