package testenv

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// JournalRemote is where Debian's systemd-journal-remote package installs
// the program that writes a journal file from journal export data.
const JournalRemote = "/lib/systemd/systemd-journal-remote"

// NeedsJournal skips the test under -short, and unless journalctl and
// systemd-journal-remote are installed: a test that writes a journal
// directory and reads it back with journalctl needs both, and no running
// journald.
func NeedsJournal(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("writes a journal with systemd-journal-remote and reads it with journalctl; skipped with -short")
	}
	if _, err := exec.LookPath("journalctl"); err != nil {
		t.Skip("needs journalctl, which is not in PATH")
	}
	if _, err := os.Stat(JournalRemote); err != nil {
		t.Skipf("needs %s (apt-get install systemd-journal-remote; .ci/run installs it)", JournalRemote)
	}
}

// WriteJournal writes entries, each a map of field names to values, into
// the journal file dir/name (name ends in .journal), as a remote host's
// entries reach a central journal: in the journal export format, read by
// systemd-journal-remote. Each entry must have __REALTIME_TIMESTAMP (in
// microseconds); __MONOTONIC_TIMESTAMP (the same) and _BOOT_ID are
// added when missing. Call NeedsJournal first.
func WriteJournal(t testing.TB, dir, name string, entries []map[string]string) {
	t.Helper()
	var b bytes.Buffer
	for _, e := range entries {
		if _, ok := e["__MONOTONIC_TIMESTAMP"]; !ok {
			// journalctl orders the entries of one boot by this clock,
			// across files too: it follows the wall clock here.
			writeExportField(&b, "__MONOTONIC_TIMESTAMP", []byte(e["__REALTIME_TIMESTAMP"]))
		}
		if _, ok := e["_BOOT_ID"]; !ok {
			writeExportField(&b, "_BOOT_ID", []byte("0123456789abcdef0123456789abcdef"))
		}
		// A stable order: the timestamps first, as journalctl -o export
		// writes them.
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			return strings.Compare(strings.TrimPrefix(a, "__"), strings.TrimPrefix(b, "__"))
		})
		for _, k := range keys {
			writeExportField(&b, k, []byte(e[k]))
		}
		b.WriteByte('\n')
	}
	export := filepath.Join(t.TempDir(), "entries.export")
	if err := os.WriteFile(export, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(JournalRemote, "--split-mode=none", "--output="+filepath.Join(dir, name), export).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", JournalRemote, err, out)
	}
}

// writeExportField writes one field in the journal export format: NAME=value
// for text, and NAME, a newline, the length as 64-bit little-endian and the
// bytes for a value with a newline or another control character.
func writeExportField(b *bytes.Buffer, name string, value []byte) {
	text := !bytes.ContainsFunc(value, func(r rune) bool { return r < 0x20 && r != '\t' })
	if text {
		b.WriteString(name + "=")
		b.Write(value)
		b.WriteByte('\n')
		return
	}
	b.WriteString(name + "\n")
	writeLE64(b, uint64(len(value)))
	b.Write(value)
	b.WriteByte('\n')
}

func writeLE64(b *bytes.Buffer, n uint64) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], n)
	b.Write(buf[:])
}
