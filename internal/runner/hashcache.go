package runner

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// HashCache remembers the SHA-256 of root-only program files, so that a
// program run again is not read and hashed again at plan time while nothing
// shows it changed (docs/performance.md, "The program's hash and the target
// user, cached"). A file is known by its device and inode; its hash is used
// again only while the fstat of the newly opened descriptor gives the same
// size, mode, owner, mtime and ctime (with nanoseconds) as when it was
// hashed, and any difference hashes it again. Only a file nobody but root can
// write (Resolved.Untrusted empty, and the file itself owned by root without
// group or other write) is ever cached, and only once its ctime and mtime are
// older than the hash by settle, so that a write in the same clock tick as
// the one before it cannot leave the stamp unchanged.
//
// The exec-time check (File.Verify) never uses the cache: it hashes the
// descriptor again, so a change the stamp missed is refused, never run, and
// drops the entry (File.forget).
//
// A nil *HashCache caches nothing. It is safe for concurrent use.
type HashCache struct {
	max    int
	settle time.Duration
	now    func() time.Time
	// hashed counts the files hashed by OpenProgram through this cache,
	// cached or not.
	hashed atomic.Uint64

	mu      sync.Mutex
	entries map[fileID]*list.Element // of *hashEntry
	order   *list.List               // most recently used first
}

// fileID is a file's identity: device and inode.
type fileID struct{ dev, ino uint64 }

// fileStamp is what proves a file unchanged since it was hashed.
type fileStamp struct {
	size         int64
	mode         uint32
	uid, gid     uint32
	mtime, ctime unix.Timespec
}

type hashEntry struct {
	id     fileID
	stamp  fileStamp
	sum    [32]byte
	script bool
}

// DefaultHashCacheSize bounds a HashCache made by NewHashCache(0): more
// programs than a rule set names, and 256 entries of under 200 bytes.
const DefaultHashCacheSize = 256

// hashSettle is how much older than the hash a file's mtime and ctime must
// be for its hash to be cached: far more than a clock tick.
const hashSettle = 2 * time.Second

// NewHashCache returns a cache of at most max entries (DefaultHashCacheSize
// when max <= 0), the least recently used dropped first.
func NewHashCache(max int) *HashCache {
	if max <= 0 {
		max = DefaultHashCacheSize
	}
	return &HashCache{max: max, settle: hashSettle, now: time.Now,
		entries: map[fileID]*list.Element{}, order: list.New()}
}

func stampOf(st *unix.Stat_t) fileStamp {
	return fileStamp{size: st.Size, mode: st.Mode, uid: st.Uid, gid: st.Gid, mtime: st.Mtim, ctime: st.Ctim}
}

// rootOnlyFile reports whether nobody but root can write the file st
// describes: owned by root, not writable by group or others. (An ACL that
// grants write shows in the group bits as its mask.)
func rootOnlyFile(st *unix.Stat_t) bool {
	return st.Uid == 0 && st.Mode&0o022 == 0
}

// lookup returns the cached hash of the file st describes if its stamp is
// unchanged.
func (c *HashCache) lookup(st *unix.Stat_t) (sum [32]byte, script, ok bool) {
	if c == nil {
		return sum, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, found := c.entries[fileID{st.Dev, st.Ino}]
	if !found {
		return sum, false, false
	}
	e := el.Value.(*hashEntry)
	if e.stamp != stampOf(st) {
		c.order.Remove(el)
		delete(c.entries, e.id)
		return sum, false, false
	}
	c.order.MoveToFront(el)
	return e.sum, e.script, true
}

// store caches sum for the file whose stamp was before, taken before it was
// hashed, if after (taken once it was hashed) is the same, the file is
// root-only and it settled before the hash.
func (c *HashCache) store(before, after *unix.Stat_t, sum [32]byte, script bool) {
	if c == nil || !rootOnlyFile(before) || stampOf(before) != stampOf(after) ||
		before.Dev != after.Dev || before.Ino != after.Ino {
		return
	}
	limit := c.now().Add(-c.settle)
	if !time.Unix(before.Mtim.Unix()).Before(limit) || !time.Unix(before.Ctim.Unix()).Before(limit) {
		return
	}
	id := fileID{before.Dev, before.Ino}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, found := c.entries[id]; found {
		c.order.Remove(el)
		delete(c.entries, id)
	}
	c.entries[id] = c.order.PushFront(&hashEntry{id: id, stamp: stampOf(before), sum: sum, script: script})
	for c.order.Len() > c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.entries, old.Value.(*hashEntry).id)
	}
}

// forget drops the entry of the file dev, ino.
func (c *HashCache) forget(dev, ino uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, found := c.entries[fileID{dev, ino}]; found {
		c.order.Remove(el)
		delete(c.entries, fileID{dev, ino})
	}
}

// Len returns the number of cached hashes.
func (c *HashCache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
