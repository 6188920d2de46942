package runner

import (
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// TargetCache remembers LookupTarget's answers while the files they come
// from are unchanged (docs/performance.md, "The program's hash and the
// target user, cached"): every Lookup stats /etc/passwd and /etc/group, and
// any difference in device, inode, size, mode, owner, mtime or ctime (with
// nanoseconds) from when the answers were read drops them all, so that a
// changed account or group membership is seen by the next request. An
// answer is kept only when both files are root-only, were the same before
// and after it was read, and settled (mtime and ctime older than the read by
// hashSettle). It caches nothing when os/user asks the C library
// (userDBFilesOnly unset), since the modules /etc/nsswitch.conf names
// answer from elsewhere than those files.
//
// A nil *TargetCache caches nothing. It is safe for concurrent use.
type TargetCache struct {
	files  []string
	lookup func(string) (Target, error)
	max    int
	settle time.Duration
	now    func() time.Time

	mu      sync.Mutex
	stamps  []fileState // of files, when entries were read
	entries map[string]Target
}

// fileState is a file's identity and stamp.
type fileState struct {
	id    fileID
	stamp fileStamp
}

// maxTargets bounds a TargetCache: the target users of one machine's rules
// are root, the unprivileged user and the requesters themselves.
const maxTargets = 64

// NewTargetCache returns the cache of LookupTarget over /etc/passwd and
// /etc/group; when os/user does not read only those files it returns nil,
// which caches nothing.
func NewTargetCache() *TargetCache {
	if !userDBFilesOnly {
		return nil
	}
	return newTargetCache([]string{"/etc/passwd", "/etc/group"}, LookupTarget)
}

func newTargetCache(files []string, lookup func(string) (Target, error)) *TargetCache {
	return &TargetCache{files: files, lookup: lookup, max: maxTargets, settle: hashSettle, now: time.Now,
		entries: map[string]Target{}}
}

// Lookup returns LookupTarget(name), from the cache while the files are
// unchanged.
func (c *TargetCache) Lookup(name string) (Target, error) {
	if c == nil {
		return LookupTarget(name)
	}
	before, ok := c.state()
	if !ok {
		return c.lookup(name)
	}
	c.mu.Lock()
	if !slices.Equal(c.stamps, before) {
		clear(c.entries)
		c.stamps = before
	}
	t, found := c.entries[name]
	c.mu.Unlock()
	if found {
		return t.clone(), nil
	}
	t, err := c.lookup(name)
	if err != nil {
		return t, err
	}
	after, ok := c.state()
	if !ok || !slices.Equal(before, after) || !c.settled(after) {
		return t, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Equal(c.stamps, after) {
		return t, nil // another Lookup saw the files change meanwhile
	}
	if len(c.entries) >= c.max {
		clear(c.entries)
	}
	c.entries[name] = t.clone()
	return t, nil
}

// state stats the files; ok is false when one cannot be examined or someone
// other than root can write it.
func (c *TargetCache) state() (_ []fileState, ok bool) {
	out := make([]fileState, 0, len(c.files))
	for _, f := range c.files {
		var st unix.Stat_t
		if err := unix.Stat(f, &st); err != nil || !rootOnlyFile(&st) {
			return nil, false
		}
		out = append(out, fileState{id: fileID{st.Dev, st.Ino}, stamp: stampOf(&st)})
	}
	return out, true
}

// settled reports whether every file's mtime and ctime is older than now by
// c.settle.
func (c *TargetCache) settled(s []fileState) bool {
	limit := c.now().Add(-c.settle)
	for _, f := range s {
		if !time.Unix(f.stamp.mtime.Unix()).Before(limit) || !time.Unix(f.stamp.ctime.Unix()).Before(limit) {
			return false
		}
	}
	return true
}

// clone returns t with a Groups slice of its own.
func (t Target) clone() Target {
	t.Groups = slices.Clone(t.Groups)
	return t
}
