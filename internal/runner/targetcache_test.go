package runner

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// groupFileLookup is a LookupTarget over a group file of its own: name has
// uid and gid 1000 and every group whose member list names it. It counts
// its calls.
func groupFileLookup(t *testing.T, group string, calls *int) func(string) (Target, error) {
	return func(name string) (Target, error) {
		*calls++
		f, err := os.Open(group)
		if err != nil {
			return Target{}, err
		}
		defer f.Close()
		tg := Target{Name: name, UID: 1000, GID: 1000, Groups: []uint32{1000}}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			if len(fields) == 4 && slices.Contains(strings.Split(fields[3], ","), name) {
				switch fields[0] {
				case "wheel":
					tg.Groups = append(tg.Groups, 10)
				case "adm":
					tg.Groups = append(tg.Groups, 4)
				}
			}
		}
		return tg, sc.Err()
	}
}

// TestTargetCacheSeesGroupChange proves that a change of group membership
// is seen by the next lookup, even when the group file keeps its size and
// its mtime is set back, and that an unchanged one is not read again.
func TestTargetCacheSeesGroupChange(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	passwd, group := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	if err := os.WriteFile(passwd, []byte("alice:x:1000:1000::/home/alice:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(group, []byte("wheel:x:10:alice\nadm:x:4:carol\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := 0
	c := newTargetCache([]string{passwd, group}, groupFileLookup(t, group, &calls))
	c.now = func() time.Time { return time.Now().Add(time.Hour) }
	for range 3 {
		tg, err := c.Lookup("alice")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tg.Groups, []uint32{1000, 10}) {
			t.Fatalf("groups %v, want [1000 10]", tg.Groups)
		}
		tg.Groups[0] = 0 // the caller's copy: must not reach the cache
	}
	if calls != 1 {
		t.Fatalf("looked up %d times for 3 lookups with unchanged files, want 1", calls)
	}

	var before unix.Stat_t
	if err := unix.Stat(group, &before); err != nil {
		t.Fatal(err)
	}
	// alice leaves wheel and joins adm: same size.
	if err := os.WriteFile(group, []byte("wheel:x:10:carol\nadm:x:4:alice\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(before.Mtim.Unix())
	if err := os.Chtimes(group, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	var after unix.Stat_t
	if err := unix.Stat(group, &after); err != nil {
		t.Fatal(err)
	}
	if after.Ctim == before.Ctim {
		t.Skipf("this filesystem left the ctime unchanged (%v) across a write", after.Ctim)
	}
	tg, err := c.Lookup("alice")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tg.Groups, []uint32{1000, 4}) {
		t.Errorf("after the membership change: groups %v, want [1000 4]", tg.Groups)
	}
	if calls != 2 {
		t.Errorf("looked up %d times, want 2", calls)
	}
}

// TestTargetCacheNotRootOnly proves that nothing is cached while a file
// someone other than root can write is among the database's.
func TestTargetCacheNotRootOnly(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	passwd, group := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	for _, f := range []string{passwd, group} {
		if err := os.WriteFile(f, []byte("wheel:x:10:alice\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(group, 0o664); err != nil {
		t.Fatal(err)
	}
	calls := 0
	c := newTargetCache([]string{passwd, group}, groupFileLookup(t, group, &calls))
	c.now = func() time.Time { return time.Now().Add(time.Hour) }
	for range 3 {
		if _, err := c.Lookup("alice"); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 3 {
		t.Errorf("looked up %d times for 3 lookups, want 3: a group-writable group file was trusted", calls)
	}
}

// TestNewTargetCacheFilesOnly proves that the cache is made only when
// os/user reads the files itself.
func TestNewTargetCacheFilesOnly(t *testing.T) {
	if got := NewTargetCache() != nil; got != userDBFilesOnly {
		t.Errorf("NewTargetCache() made a cache: %v; os/user reads only the files: %v", got, userDBFilesOnly)
	}
}
