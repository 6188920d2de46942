// Package journalctl runs journalctl, systemd's reader of the journal, for
// agent-sudo audit's --journal-dir and --journal-file: an argv and no
// shell, a fixed environment, and its error output kept bounded for the
// message. It is linked into the CLI only: the daemon starts no process
// but approved stages and notifiers (internal/spawn).
package journalctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// ErrNotFound is returned when journalctl cannot be found.
var ErrNotFound = errors.New("journalctl not found (it is part of systemd); it reads the journal")

// maxStderr bounds journalctl's error output kept for the message.
const maxStderr = 4 << 10

// Start runs prog (journalctl from PATH when "") with args until ctx ends,
// and returns its standard output and wait, which waits for it to exit
// and returns an error that carries its error output when it failed.
// Cancelling ctx kills it.
func Start(ctx context.Context, prog string, args []string) (stdout io.Reader, wait func() error, err error) {
	if prog == "" {
		p, err := exec.LookPath("journalctl")
		if err != nil {
			return nil, nil, ErrNotFound
		}
		prog = p
	}
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = []string{"LC_ALL=C", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"}
	stderr := &boundedBuffer{max: maxStderr}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			err = ErrNotFound
		}
		return nil, nil, fmt.Errorf("run journalctl: %w", err)
	}
	return out, func() error {
		// What is left of the output is not wanted: read it so that
		// journalctl can exit.
		_, _ = io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				msg = "no message"
			}
			return fmt.Errorf("journalctl failed (%v): %s", err, msg)
		}
		return nil
	}, nil
}

// boundedBuffer keeps the first max bytes written to it. It is a Writer
// and nothing more: a bytes.Buffer embedded would lend it ReadFrom, which
// io.Copy (exec's copy of the error output) would use instead of Write,
// past the bound.
type boundedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string { return b.buf.String() }
