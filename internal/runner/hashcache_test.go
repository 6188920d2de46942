package runner

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// settledCache is a HashCache whose clock is an hour ahead, so that a file
// written by the test counts as settled.
func settledCache(max int) *HashCache {
	c := NewHashCache(max)
	c.now = func() time.Time { return time.Now().Add(time.Hour) }
	return c
}

// program writes an executable file with content into a new directory and
// returns it resolved as Resolve would for a root-only path.
func program(t *testing.T, content string, mode os.FileMode) Resolved {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return Resolved{Path: p, Link: p}
}

func openCached(t *testing.T, c *HashCache, r Resolved) *File {
	t.Helper()
	f, err := c.OpenProgram(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// TestHashCacheReusesRootOnly proves that a root-only program opened again
// unchanged is not hashed again, and that the hash is still the content's.
func TestHashCacheReusesRootOnly(t *testing.T) {
	requireRoot(t)
	c := settledCache(0)
	r := program(t, "#!/bin/sh\ntrue\n", 0o755)
	want := sha256.Sum256([]byte("#!/bin/sh\ntrue\n"))
	for i := range 3 {
		f := openCached(t, c, r)
		if f.SHA256 != want || !f.Script {
			t.Fatalf("open %d: sha256 %x script %v, want %x and a script", i, f.SHA256, f.Script, want)
		}
		if err := f.Verify(); err != nil {
			t.Fatalf("open %d: Verify: %v", i, err)
		}
	}
	if n := c.hashed.Load(); n != 1 {
		t.Errorf("hashed %d times in 3 opens of an unchanged root-only file, want 1 (the cache was not used)", n)
	}
}

// TestHashCacheRewrittenFileRehashed proves that a file rewritten in place
// with the same size and its mtime set back (so only its ctime tells) is
// hashed again.
func TestHashCacheRewrittenFileRehashed(t *testing.T) {
	requireRoot(t)
	c := settledCache(0)
	r := program(t, "#!/bin/sh\necho a\n", 0o755)
	first := openCached(t, c, r)
	var before unix.Stat_t
	if err := unix.Stat(r.Path, &before); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.Path, []byte("#!/bin/sh\necho b\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(before.Mtim.Unix())
	if err := os.Chtimes(r.Path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	var after unix.Stat_t
	if err := unix.Stat(r.Path, &after); err != nil {
		t.Fatal(err)
	}
	if after.Size != before.Size || after.Mtim != before.Mtim {
		t.Fatalf("the rewrite changed size or mtime (%d %v -> %d %v): not the case this test is about", before.Size, before.Mtim, after.Size, after.Mtim)
	}
	if after.Ctim == before.Ctim {
		t.Skipf("this filesystem left the ctime unchanged (%v) across a write: the stamp cannot tell, and the exec-time check is what catches it", after.Ctim)
	}
	second := openCached(t, c, r)
	if want := sha256.Sum256([]byte("#!/bin/sh\necho b\n")); second.SHA256 != want {
		t.Fatalf("after the rewrite: sha256 %x, want the new content's %x (first open: %x)", second.SHA256, want, first.SHA256)
	}
	if n := c.hashed.Load(); n != 2 {
		t.Errorf("hashed %d times, want 2", n)
	}
}

// TestHashCacheNeverCachesOthersFiles proves that a program someone other
// than root can change (the file group-writable, owned by another user, or
// in a directory another user can write) is hashed on every open.
func TestHashCacheNeverCachesOthersFiles(t *testing.T) {
	requireRoot(t)
	cases := map[string]func(t *testing.T) Resolved{
		"group-writable": func(t *testing.T) Resolved { return program(t, "x", 0o775) },
		"world-writable": func(t *testing.T) Resolved { return program(t, "x", 0o757) },
		"owned by uid 1000": func(t *testing.T) Resolved {
			r := program(t, "x", 0o755)
			if err := os.Chown(r.Path, 1000, 0); err != nil {
				t.Fatal(err)
			}
			return r
		},
		"in a directory others can write": func(t *testing.T) Resolved {
			r := program(t, "x", 0o755)
			r.Untrusted = []Writable{{Path: filepath.Dir(r.Path), Why: "the directory is writable by everyone"}}
			return r
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			c := settledCache(0)
			r := mk(t)
			for range 3 {
				openCached(t, c, r)
			}
			if n, l := c.hashed.Load(), c.Len(); l != 0 || (n != 3 && len(r.Untrusted) == 0) {
				t.Errorf("hashed %d times, %d cached, want 3 and none", n, l)
			}
		})
	}
}

// TestHashCacheNotSettled proves that a file changed less than hashSettle
// before it is hashed is not cached.
func TestHashCacheNotSettled(t *testing.T) {
	requireRoot(t)
	c := NewHashCache(0)
	r := program(t, "x", 0o755)
	openCached(t, c, r)
	if l := c.Len(); l != 0 {
		t.Errorf("a file written just now was cached (%d entries)", l)
	}
}

// TestHashCacheVerifyRefusesStale proves that the exec-time check does not
// trust the cache: a cached hash that is not the content's is refused by
// Verify, and dropped.
func TestHashCacheVerifyRefusesStale(t *testing.T) {
	requireRoot(t)
	c := settledCache(0)
	r := program(t, "x", 0o755)
	openCached(t, c, r)
	var st unix.Stat_t
	if err := unix.Stat(r.Path, &st); err != nil {
		t.Fatal(err)
	}
	c.store(&st, &st, sha256.Sum256([]byte("not the content")), false) // as if a change left the stamp alone
	f := openCached(t, c, r)
	err := f.Verify()
	if err == nil || !strings.Contains(err.Error(), "content changed") {
		t.Fatalf("Verify of a file whose cached hash is not its content's: %v, want a refusal", err)
	}
	if l := c.Len(); l != 0 {
		t.Errorf("the stale entry is still cached (%d entries)", l)
	}
}

// TestHashCacheBounded proves that the cache keeps at most its size, the
// least recently used dropped.
func TestHashCacheBounded(t *testing.T) {
	requireRoot(t)
	c := settledCache(2)
	a, b, d := program(t, "a", 0o755), program(t, "b", 0o755), program(t, "d", 0o755)
	openCached(t, c, a)
	openCached(t, c, b)
	openCached(t, c, a) // a is now the most recently used
	openCached(t, c, d) // drops b
	if l := c.Len(); l != 2 {
		t.Fatalf("%d entries, want 2", l)
	}
	before := c.hashed.Load()
	openCached(t, c, a)
	openCached(t, c, d)
	if n := c.hashed.Load() - before; n != 0 {
		t.Errorf("a and d were hashed again (%d), want both still cached", n)
	}
	openCached(t, c, b)
	if n := c.hashed.Load() - before; n != 1 {
		t.Errorf("b was hashed %d times, want 1: it should have been dropped", n)
	}
}
