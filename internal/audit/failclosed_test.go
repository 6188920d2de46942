package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// decisionRecord is a small record for the fail-closed tests.
func decisionRecord(id string) *Record {
	return &Record{Type: TypeDecision, ID: id, Session: "s", Host: "h",
		Decision: &DecisionSection{Verdict: "allowed", By: "rule"}}
}

// verifyIDs checks the chain of path and that it holds exactly the
// decision records ids, in order.
func verifyIDs(t *testing.T, path string, ids []string) {
	t.Helper()
	res, err := Verify(context.Background(), path)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	var got []string
	for e, err := range Read(context.Background(), path) {
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		got = append(got, e.Record.ID)
	}
	if strings.Join(got, " ") != strings.Join(ids, " ") || res.Records != len(ids) {
		t.Fatalf("log holds %q (%d records), want %q", got, res.Records, ids)
	}
}

// TestFailClosedImmutable makes the log immutable (chattr +i: root cannot
// write it either, even through the descriptor the log already has open),
// checks that every Append fails, then makes it writable again and checks
// that the log recovers by itself with the chain intact.
func TestFailClosedImmutable(t *testing.T) {
	testenv.NeedsRoot(t) // chattr +i
	chattr, err := exec.LookPath("chattr")
	if err != nil {
		t.Skip("chattr not installed")
	}
	path := logPath(t)
	l := openLog(t, path, Options{})
	ctx := context.Background()
	if _, err := l.Append(ctx, decisionRecord("before")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(chattr, "+i", path).CombinedOutput(); err != nil {
		t.Skipf("chattr +i not supported here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(chattr, "-i", path).Run() })

	for i := range 3 {
		_, err := l.Append(ctx, decisionRecord(fmt.Sprintf("while-immutable-%d", i)))
		if err == nil {
			t.Fatalf("Append %d to an immutable log succeeded", i)
		}
		if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "the record was not written") {
			t.Errorf("Append %d error = %v; want a permission error naming the file", i, err)
		}
	}
	if out, err := exec.Command(chattr, "-i", path).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i: %v: %s", err, out)
	}
	if _, err := l.Append(ctx, decisionRecord("after")); err != nil {
		t.Fatalf("Append after the file became writable again: %v", err)
	}
	verifyIDs(t, path, []string{"before", "after"})
}

// TestFailClosedDiskFull puts the log on a 64 KiB tmpfs, fills it, checks
// that Append fails and leaves no partial line, then frees space and checks
// that the log recovers with the chain intact.
func TestFailClosedDiskFull(t *testing.T) {
	testenv.NeedsRoot(t) // mounting a tmpfs
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	path := filepath.Join(dir, "audit.jsonl")
	// A filler takes half the space, to be freed later.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 32<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openLog(t, path, Options{})
	ctx := context.Background()

	// Records with a 1 KiB message fill the rest.
	big := func(id string) *Record {
		r := decisionRecord(id)
		r.Decision.Message = strings.Repeat("x", 1000)
		return r
	}
	var written []string
	var appendErr error
	for i := 0; i < 200 && appendErr == nil; i++ {
		id := fmt.Sprintf("r%d", i)
		if _, appendErr = l.Append(ctx, big(id)); appendErr == nil {
			written = append(written, id)
		}
	}
	if appendErr == nil {
		t.Fatal("200 records of 1 KiB fit in a 64 KiB file system")
	}
	if !errors.Is(appendErr, syscall.ENOSPC) || !strings.Contains(appendErr.Error(), "the record was not written") {
		t.Errorf("Append on a full disk: %v; want ENOSPC", appendErr)
	}
	t.Logf("%d records fitted; then: %v", len(written), appendErr)
	// Still full: still failing, and nothing partial is left in the file.
	if _, err := l.Append(ctx, big("still-full")); err == nil {
		t.Error("Append succeeded on a full disk")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("the log ends with a partial line: %q", data[max(0, len(data)-80):])
	}
	if n := bytes.Count(data, []byte("\n")); n != len(written) {
		t.Errorf("the log has %d lines, want the %d acknowledged", n, len(written))
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, big("after")); err != nil {
		t.Fatalf("Append after space was freed: %v", err)
	}
	verifyIDs(t, path, append(written, "after"))
}

// faultyFile injects failures into the writer's file.
type faultyFile struct {
	logFile
	// failWrite makes Write write half the data, then fail; failSync makes
	// Sync fail after the write went through.
	failWrite, failSync *bool
	syncs               *int
}

func (f faultyFile) Write(p []byte) (int, error) {
	if *f.failWrite {
		n, _ := f.logFile.Write(p[:len(p)/2])
		return n, syscall.EIO
	}
	return f.logFile.Write(p)
}

func (f faultyFile) Sync() error {
	if f.syncs != nil {
		*f.syncs++
	}
	if *f.failSync {
		return syscall.EIO
	}
	return f.logFile.Sync()
}

// TestFailClosedInjected fails writes and syncs and checks that nothing is
// reported durable, the half-written batch is removed, and the log recovers.
func TestFailClosedInjected(t *testing.T) {
	tests := []struct {
		name           string
		write, sync    bool
		wantInErr      string
		wantAfterCount int
	}{
		{"short write then EIO", true, false, "write: input/output error", 2},
		{"fsync fails", false, true, "sync: input/output error", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var failWrite, failSync bool
			path := logPath(t)
			l := openLog(t, path, Options{wrap: func(f logFile) logFile {
				return faultyFile{logFile: f, failWrite: &failWrite, failSync: &failSync}
			}})
			ctx := context.Background()
			if _, err := l.Append(ctx, decisionRecord("before")); err != nil {
				t.Fatal(err)
			}
			failWrite, failSync = tt.write, tt.sync
			_, err := l.Append(ctx, decisionRecord("lost"))
			if err == nil || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Fatalf("Append = %v, want an error containing %q", err, tt.wantInErr)
			}
			failWrite, failSync = false, false
			if _, err := l.Append(ctx, decisionRecord("after")); err != nil {
				t.Fatalf("Append after recovery: %v", err)
			}
			verifyIDs(t, path, []string{"before", "after"})
		})
	}
}

// TestRefuseUnsafeLog checks the ownership and mode checks of Open.
func TestRefuseUnsafeLog(t *testing.T) {
	testenv.NeedsRoot(t) // the ownership checks are for root
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, path string)
		want  string
	}{
		{"directory writable by group", func(t *testing.T, dir, path string) {
			must(t, os.Chmod(dir, 0o770))
		}, "is writable by group or others (mode 0770)"},
		{"directory writable by others", func(t *testing.T, dir, path string) {
			must(t, os.Chmod(dir, 0o1777))
		}, "is writable by group or others"},
		{"directory not owned by root", func(t *testing.T, dir, path string) {
			must(t, os.Chown(dir, 65534, 0))
		}, "is owned by uid 65534, not root"},
		{"file writable by others", func(t *testing.T, dir, path string) {
			must(t, os.WriteFile(path, nil, 0o600))
			must(t, os.Chmod(path, 0o646))
		}, "the file is writable by group or others (mode 0646)"},
		{"file not owned by root", func(t *testing.T, dir, path string) {
			must(t, os.WriteFile(path, nil, 0o600))
			must(t, os.Chown(path, 65534, 0))
		}, "the file is owned by uid 65534, not root"},
		{"file with two links", func(t *testing.T, dir, path string) {
			must(t, os.WriteFile(path, nil, 0o600))
			must(t, os.Link(path, filepath.Join(t.TempDir(), "second")))
		}, "the file has 2 hard links"},
		{"symbolic link", func(t *testing.T, dir, path string) {
			must(t, os.WriteFile(filepath.Join(dir, "real"), nil, 0o600))
			must(t, os.Symlink("real", path))
		}, "is a symbolic link"},
		{"not a regular file", func(t *testing.T, dir, path string) {
			must(t, unix.Mkfifo(path, 0o600))
		}, "not a regular file"},
		{"directory is a file", func(t *testing.T, dir, path string) {
			must(t, os.Remove(dir))
			must(t, os.WriteFile(dir, nil, 0o600))
		}, "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			must(t, os.Mkdir(dir, 0o750))
			path := filepath.Join(dir, "audit.jsonl")
			tt.setup(t, dir, path)
			l, err := Open(path, Options{})
			if err == nil {
				_ = l.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open = %v\nwant an error naming the log and containing %q", err, tt.want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestNewLogModes checks the directory and file a fresh log creates.
func TestNewLogModes(t *testing.T) {
	testenv.NeedsRoot(t) // ownership is set only as root
	dirMode, fileMode, gid := fs.FileMode(0o700), fs.FileMode(0o600), uint32(0)
	if g, err := user.LookupGroup("adm"); err == nil {
		n, _ := strconv.Atoi(g.Gid)
		dirMode, fileMode, gid = 0o750, 0o640, uint32(n)
	}
	path := filepath.Join(t.TempDir(), "var", "log", "agent-sudo", "audit.jsonl")
	openLog(t, path, Options{})
	for _, c := range []struct {
		name string
		mode fs.FileMode
	}{{filepath.Dir(path), dirMode}, {path, fileMode}} {
		fi, err := os.Stat(c.name)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != c.mode || st.Uid != 0 || st.Gid != gid {
			t.Errorf("%s: mode %04o owner %d:%d, want %04o 0:%d", c.name, fi.Mode().Perm(), st.Uid, st.Gid, c.mode, gid)
		}
	}
}

// TestSecondWriterRefused: a second Open of the same file fails while the
// first is open, and succeeds once it is closed.
func TestSecondWriterRefused(t *testing.T) {
	path := logPath(t)
	l := openLog(t, path, Options{})
	if l2, err := Open(path, Options{}); err == nil {
		_ = l2.Close()
		t.Fatal("a second writer could open the log")
	} else if !strings.Contains(err.Error(), "holds its writers' lock") {
		t.Errorf("second Open: %v", err)
	}
	must(t, l.Close())
	l2, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	must(t, l2.Close())
}
