package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/sysfile"
	"golang.org/x/sys/unix"
)

// Cgroups makes the cgroups that hold each request's processes: one child
// directory per pipeline in the cgroup v2 hierarchy, under the daemon's own
// cgroup. Get one from [OpenCgroups]; it is safe for concurrent use.
type Cgroups struct {
	// parent is the directory request cgroups are made in.
	parent string
	// prefix starts every request cgroup's name; it holds the daemon's pid
	// so that two daemons never share a name.
	prefix string
	seq    atomic.Uint64
	// hasKill: the kernel has cgroup.kill (Linux 5.14); otherwise the
	// cgroup is frozen and each member killed.
	hasKill bool
	// pids: the pids controller is enabled for request cgroups
	// (EnablePids), so each can get its own pids.max (Spec.PidsMax).
	pids bool
	// v1, when set, is the cgroup v1 hierarchy of the pids controller
	// (systemd's hybrid layout), where EnablePids found it instead:
	// each request cgroup then has a twin there that holds its pids.max.
	v1 *pidsV1
}

// OpenCgroups finds the cgroup v2 hierarchy (mounted at /sys/fs/cgroup, or
// at /sys/fs/cgroup/unified in systemd's hybrid layout) and the daemon's own
// cgroup in it, and checks that a child cgroup can be made, entered and
// removed there. The error says why per-request cgroups are not available.
func OpenCgroups() (*Cgroups, error) {
	mount, err := cgroup2Mount("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	own, err := ownCgroup2("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mount, own)
	c := &Cgroups{parent: parent, prefix: "agent-sudo-" + strconv.Itoa(os.Getpid()) + "-"}
	c.removeStale()
	// A probe cgroup shows that this process may make, use and remove one.
	g, err := c.create("", 0)
	if err != nil {
		return nil, err
	}
	_, statErr := os.Stat(filepath.Join(g.dir, "cgroup.kill"))
	c.hasKill = statErr == nil
	if _, err := os.Stat(filepath.Join(g.dir, "cgroup.freeze")); err != nil && !c.hasKill {
		_ = g.remove()
		return nil, fmt.Errorf("cgroup %s has neither cgroup.kill nor cgroup.freeze (Linux 5.2 or later is needed)", g.dir)
	}
	if err := g.remove(); err != nil {
		return nil, err
	}
	return c, nil
}

// EnablePids makes sure the pids controller applies to the request
// cgroups, so that each gets the pids.max its Spec.PidsMax asks for. In the
// cgroup v2 hierarchy it does when the parent's cgroup.subtree_control
// lists "pids", and otherwise "+pids" is written there when the parent's
// cgroup.controllers offers it (under systemd the unit's Delegate=yes hands
// the daemon its cgroup). Where the v2 hierarchy has no pids controller
// because it is bound to cgroup v1 (systemd's hybrid layout), each request
// cgroup gets a twin in the daemon's own v1 pids cgroup instead, and its
// stages are forked from a thread moved there for the fork (see
// [ForkInPidsV1]); a probe twin shows that one can be made, limited and
// removed. The daemon calls it once at start, before any request cgroup
// holds a process. The error says why neither is available; request
// cgroups then get no pids.max, and one request can take every pid the
// daemon's cgroup may have (systemd's TasksMax), leaving the daemon unable
// to start a thread.
func (c *Cgroups) EnablePids() error {
	return c.enablePids(func() (*pidsV1, error) {
		return findPidsV1("/proc/self/mountinfo", "/proc/self/cgroup")
	})
}

// enablePids is EnablePids with the v1 pids hierarchy found by findV1.
func (c *Cgroups) enablePids(findV1 func() (*pidsV1, error)) error {
	c.pids, c.v1 = false, nil
	err := c.enablePidsV2()
	if err == nil {
		c.pids = true
		return nil
	}
	h, v1err := findV1()
	if v1err == nil {
		// A probe twin, named as no request cgroup is (their counter
		// starts at 1), shows that one can be made, limited and
		// removed.
		dir := filepath.Join(h.parent, c.prefix+"0")
		_ = unix.Rmdir(dir) // left by an earlier daemon with this pid
		if v1err = mkdirLimited(dir, 1); v1err == nil {
			v1err = unix.Rmdir(dir)
		}
	}
	if v1err != nil {
		return fmt.Errorf("%w; and cgroup v1: %w", err, v1err)
	}
	c.pids, c.v1 = true, h
	return nil
}

// enablePidsV2 enables the pids controller for the request cgroups in the
// cgroup v2 hierarchy.
func (c *Cgroups) enablePidsV2() error {
	sub, err := os.ReadFile(filepath.Join(c.parent, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("cgroup: reading %s: %w", filepath.Join(c.parent, "cgroup.subtree_control"), err)
	}
	if !slices.Contains(strings.Fields(string(sub)), "pids") {
		avail, err := os.ReadFile(filepath.Join(c.parent, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("cgroup: reading %s: %w", filepath.Join(c.parent, "cgroup.controllers"), err)
		}
		if !slices.Contains(strings.Fields(string(avail)), "pids") {
			return hint.Wrap(fmt.Errorf("cgroup: the pids controller is not available in %s, whose cgroup.controllers offers %q",
				c.parent, strings.TrimSpace(string(avail))), "in systemd's hybrid layout the pids controller is cgroup v1's")
		}
		if err := os.WriteFile(filepath.Join(c.parent, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
			return fmt.Errorf("cgroup: enabling the pids controller in %s: %w", filepath.Join(c.parent, "cgroup.subtree_control"), err)
		}
	}
	return nil
}

// Parent is the directory request cgroups are made in.
func (c *Cgroups) Parent() string { return c.parent }

// cgroup2Mount returns where the cgroup v2 hierarchy is mounted, from a
// mountinfo file.
func cgroup2Mount(mountinfo string) (string, error) {
	return cgroupMount(mountinfo, "")
}

// cgroupMount returns where a cgroup hierarchy is mounted from its root,
// from a mountinfo file: the v2 hierarchy when ctrl is empty, otherwise
// the v1 hierarchy holding controller ctrl.
func cgroupMount(mountinfo, ctrl string) (string, error) {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return "", fmt.Errorf("cgroup: reading %s: %w", mountinfo, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || f[3] != "/" {
			continue
		}
		if ctrl == "" && g[0] == "cgroup2" || ctrl != "" && g[0] == "cgroup" && slices.Contains(strings.Split(g[2], ","), ctrl) {
			return unescapeMountinfo(f[4]), nil
		}
	}
	if ctrl != "" {
		return "", errors.New("cgroup: no v1 pids hierarchy is mounted")
	}
	return "", errors.New("cgroup: no cgroup v2 hierarchy is mounted (neither unified nor hybrid layout); per-request cgroups need one")
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of a
// mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup2 returns this process's cgroup in the v2 hierarchy (the "0::"
// line of /proc/self/cgroup).
func ownCgroup2(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cgroup: reading %s: %w", path, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
				return "", fmt.Errorf("cgroup: the daemon's own cgroup %q is not usable", p)
			}
			return p, nil
		}
	}
	return "", fmt.Errorf("cgroup: %s has no cgroup v2 entry", path)
}

// cgroup is one request's cgroup.
type cgroup struct {
	dir string
	// fd is the open directory, handed to clone3 (CLONE_INTO_CGROUP) so
	// that each stage starts inside the cgroup.
	fd      *os.File
	hasKill bool
	// killed is set once cgroup.kill was written: nothing can enter the
	// cgroup after (no member is left alive to fork, and the kernel kills
	// a fork under way too), so a second kill has nothing to do.
	killed bool
	// v1, when set, is the hierarchy of v1Dir, the cgroup's twin in the
	// v1 pids hierarchy, which holds its pids.max; stages are forked
	// into it by ForkInPidsV1.
	v1    *pidsV1
	v1Dir string
}

// create makes a new, empty request cgroup, its name ending in tag when
// tag is set (see Spec.CgroupTag), with pids.max set to pidsMax when it is
// positive and the pids controller is enabled (EnablePids): in the cgroup,
// or in its twin of the same name in the v1 pids hierarchy.
func (c *Cgroups) create(tag string, pidsMax int) (*cgroup, error) {
	if tag != "" && !validTag(tag) {
		return nil, fmt.Errorf("cgroup: tag %q is not 1 to 64 lower-case hex digits", tag)
	}
	if tag != "" {
		tag = "-" + tag
	}
	g := &cgroup{hasKill: c.hasKill}
	limit := pidsMax > 0 && c.pids
	for tries := 0; ; tries++ {
		name := c.prefix + strconv.FormatUint(c.seq.Add(1), 10) + tag
		g.dir = filepath.Join(c.parent, name)
		err := os.Mkdir(g.dir, 0o755)
		if err == nil && limit && c.v1 != nil {
			// Before anything enters: the limit holds from the first fork.
			g.v1, g.v1Dir = c.v1, filepath.Join(c.v1.parent, name)
			if err = mkdirLimited(g.v1Dir, pidsMax); err != nil {
				_ = os.Remove(g.dir)
			}
		}
		if err == nil {
			break
		}
		// A name left by an earlier daemon with this pid that could not
		// be removed (it still holds processes) is skipped.
		if !errors.Is(err, fs.ErrExist) || tries >= maxStaleNames {
			return nil, fmt.Errorf("cgroup: creating %s: %w", name, err)
		}
	}
	var err error
	if limit && c.v1 == nil {
		if err = setPidsMax(g.dir, pidsMax); err != nil {
			_ = os.Remove(g.dir)
			return nil, err
		}
	}
	if g.fd, err = sysfile.OpenFile(g.dir, unix.O_RDONLY|unix.O_DIRECTORY); err != nil {
		err = fmt.Errorf("cgroup: opening %s: %w", g.dir, err)
		g.fd = nil
		_ = g.remove()
		return nil, err
	}
	return g, nil
}

// mkdirLimited makes the cgroup dir with pids.max set to n, before anything
// enters it.
func mkdirLimited(dir string, n int) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	err := setPidsMax(dir, n)
	if err != nil {
		_ = os.Remove(dir)
	}
	return err
}

// setPidsMax sets the pids.max of the cgroup dir to n.
func setPidsMax(dir string, n int) error {
	if err := sysfile.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(n))); err != nil {
		return fmt.Errorf("cgroup: setting pids.max of %s: %w", dir, err)
	}
	return nil
}

// maxStaleNames bounds how many existing names create skips.
const maxStaleNames = 1000

// staleName matches the name of a request cgroup and captures the pid of
// the daemon that made it and the tag, if any, that ends it.
var staleName = regexp.MustCompile(`^agent-sudo-([0-9]+)-[0-9]+(?:-([0-9a-f]{1,64}))?$`)

// validTag reports whether tag is what Spec.CgroupTag may be: 1 to 64
// lower-case hex digits.
func validTag(tag string) bool {
	if len(tag) == 0 || len(tag) > 64 {
		return false
	}
	for _, c := range tag {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// removeStale removes the empty request cgroups that daemons no longer
// running left in the parent, for example after a crash: those named for a
// pid with no process. Names with this process's own pid are left alone,
// since another Cgroups of this process (tests make several) may be using
// them; create skips such a name, as it skips one that still holds
// processes and so cannot be removed.
func (c *Cgroups) removeStale() {
	entries, err := os.ReadDir(c.parent)
	if err != nil {
		return
	}
	own := os.Getpid()
	for _, e := range entries {
		m := staleName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		if pid == own || unix.Kill(pid, 0) != unix.ESRCH {
			continue // ours, a live daemon's, or a pid now in use
		}
		_ = unix.Rmdir(filepath.Join(c.parent, e.Name()))
	}
}

// Leftover is a request cgroup that a daemon no longer running left
// behind, as [Cgroups.ReapStale] found and emptied it.
type Leftover struct {
	// Dir is the cgroup's directory; DaemonPID the pid of the daemon that
	// made it and Tag the Spec.CgroupTag it was made with (both from its
	// name; Tag is empty for a cgroup made without one).
	Dir       string
	DaemonPID int
	Tag       string
	// Killed lists the live processes it still held, which were killed
	// (pid and executable, as for survivors).
	Killed []Survivor
	// Err says what went wrong killing them or removing the cgroup; the
	// cgroup may then still be there.
	Err error
}

// ReapStale empties and removes the request cgroups that daemons no longer
// running left in the parent: those named for a pid with no process (see
// removeStale). Whatever such a cgroup still holds outlived the daemon
// that should have applied command_timeout to it; it gets SIGKILL
// (cgroup.kill, or, before Linux 5.14, the cgroup frozen and each member
// killed, repeated until it is empty), and the cgroup is removed (as at
// the end of a run, a cgroup a root command made inside it keeps it; the
// Leftover's Err says so), and so is its twin in the daemon's v1 pids
// cgroup (systemd's hybrid layout; see EnablePids), which only a process
// that left the v2 cgroup (a root command can) keeps. A twin never
// outlives its cgroup: it is made after it and removed before it. It
// returns one Leftover per such cgroup, empty or not. The daemon calls it
// once at start, before it serves.
func (c *Cgroups) ReapStale() []Leftover {
	h, err := findPidsV1("/proc/self/mountinfo", "/proc/self/cgroup")
	if err != nil {
		h = nil // no v1 pids hierarchy: no twins
	}
	return c.reapStale(h)
}

// reapStale is ReapStale with the v1 pids hierarchy h (nil: none).
func (c *Cgroups) reapStale(h *pidsV1) []Leftover {
	entries, err := os.ReadDir(c.parent)
	if err != nil {
		return []Leftover{{Dir: c.parent, Err: fmt.Errorf("cgroup: listing %s: %w", c.parent, err)}}
	}
	own := os.Getpid()
	var out []Leftover
	for _, e := range entries {
		m := staleName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == own || unix.Kill(pid, 0) != unix.ESRCH && c.inParent(pid) {
			// Ours, or a live daemon's: one that makes request cgroups
			// here runs in the parent itself. A pid now used by a
			// process elsewhere is not the daemon that made the cgroup.
			continue
		}
		g := &cgroup{dir: filepath.Join(c.parent, e.Name())}
		if h != nil {
			g.v1Dir = filepath.Join(h.parent, e.Name())
		}
		out = append(out, reap(g, pid, m[2]))
	}
	return out
}

// inParent reports whether process pid runs in the parent cgroup, or
// whether that cannot be told (then it may be a live daemon).
func (c *Cgroups) inParent(pid int) bool {
	mount, err := cgroup2Mount("/proc/self/mountinfo")
	if err != nil {
		return true
	}
	own, err := ownCgroup2("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return err != nil || filepath.Join(mount, own) == c.parent
}

// reapTries bounds how many times reap kills a cgroup that is not yet
// empty: without cgroup.kill, a member may fork between the listing and
// the kill; frozen, it cannot, so a second round is already rare.
const reapTries = 5

// reap kills what the stale cgroup g holds, waits until it is empty and
// removes it and its twin.
func reap(g *cgroup, pid int, tag string) Leftover {
	dir := g.dir
	lo := Leftover{Dir: dir, DaemonPID: pid, Tag: tag}
	_, statErr := os.Stat(filepath.Join(dir, "cgroup.kill"))
	g.hasKill = statErr == nil
	empty := g.waitEmpty(0)
	if !empty {
		lo.Killed = g.survivors(nil)
	}
	var errs []error
	for try := 0; !empty && try < reapTries; try++ {
		g.killed = false
		if err := g.kill(); err != nil {
			errs = append(errs, err)
			break
		}
		empty = g.waitEmpty(goneTimeout)
	}
	if !empty {
		errs = append(errs, fmt.Errorf("cgroup: %s still has processes after SIGKILL", dir))
	} else if err := g.remove(); err != nil {
		errs = append(errs, err)
	}
	lo.Err = errors.Join(errs...)
	return lo
}

// members returns the pids in the cgroup.
func (g *cgroup) members() ([]int, error) {
	b, err := sysfile.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: listing %s: %w", g.dir, err)
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// kill sends SIGKILL to every process in the cgroup, including those that
// left the pipeline's process group. With cgroup.kill the kernel does it
// atomically; without it the cgroup is frozen first, so that no member can
// fork while the members are listed and killed, and thawed after (a frozen
// process killed with SIGKILL dies once thawed).
func (g *cgroup) kill() error {
	if g.hasKill {
		if g.killed {
			return nil
		}
		if err := sysfile.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1")); err != nil {
			return fmt.Errorf("cgroup: killing %s: %w", g.dir, err)
		}
		g.killed = true
		return nil
	}
	freeze := filepath.Join(g.dir, "cgroup.freeze")
	if err := os.WriteFile(freeze, []byte("1"), 0); err != nil {
		return fmt.Errorf("cgroup: freezing %s: %w", g.dir, err)
	}
	defer os.WriteFile(freeze, []byte("0"), 0) //nolint:errcheck // thawing an emptied cgroup cannot matter
	// Freezing completes asynchronously; cgroup.events says when.
	g.waitEvent("frozen 1", time.Second)
	pids, err := g.members()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		// The pid is a member, frozen, so it cannot have exited and been
		// reused; ESRCH would only mean it died anyway.
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	return nil
}

// waitEmpty waits, at most timeout, until no process is left in the
// cgroup ("populated 0" in cgroup.events), and reports whether it is empty.
func (g *cgroup) waitEmpty(timeout time.Duration) bool {
	return g.waitEvent("populated 0", timeout)
}

// waitEvent waits, at most timeout, until cgroup.events has the line want.
// The kernel signals every change of the file with POLLPRI.
func (g *cgroup) waitEvent(want string, timeout time.Duration) bool {
	fd, err := sysfile.Open(filepath.Join(g.dir, "cgroup.events"), unix.O_RDONLY)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 512)
	for {
		n, err := sysfile.Retry(func() (int, error) { return unix.Pread(fd, buf, 0) })
		if err != nil || n <= 0 {
			return false
		}
		for line := range strings.SplitSeq(string(buf[:n]), "\n") {
			if line == want {
				return true
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		// Poll with a bounded wait, and re-read in any case: an event
		// between the read and the poll is not lost, only noticed at the
		// next wake-up.
		wait := min(left, 50*time.Millisecond)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
		_, _ = unix.Poll(fds, int(wait/time.Millisecond)+1)
	}
}

// remove closes and removes the cgroup's v1 twin, if any, then the
// cgroup; it must be empty. Every process of the twin was in the cgroup
// too, and the thread that forked into it left it or ended (ForkInPidsV1).
// The twin goes first, so that it never outlives the cgroup, whose stale
// copies ReapStale finds.
func (g *cgroup) remove() error {
	if g.fd != nil {
		_ = g.fd.Close()
		g.fd = nil
	}
	for _, dir := range []string{g.v1Dir, g.dir} {
		if dir == "" {
			continue
		}
		err := unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			continue
		}
		// A cgroup that is not there is removed, whatever rmdir says: on a
		// read-only hierarchy (a container's) it answers EROFS first.
		var st unix.Stat_t
		if unix.Lstat(dir, &st) == unix.ENOENT {
			continue
		}
		return fmt.Errorf("cgroup: removing %s: %w", dir, err)
	}
	return nil
}

// Survivor is a process that was still alive in a pipeline's cgroup after
// every stage had exited; it was killed.
type Survivor struct {
	PID int
	// Exe is the process's executable (the /proc/PID/exe link), or its
	// command name in brackets when the link cannot be read. It is not
	// escaped: it comes from the file system.
	Exe string
}

// survivors returns the live members of g, leaving out the stages
// themselves (exited but not yet reaped) and any zombie.
func (g *cgroup) survivors(stages []int) []Survivor {
	pids, err := g.members()
	if err != nil {
		return nil
	}
	var out []Survivor
	for _, pid := range pids {
		if containsInt(stages, pid) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		state, comm := statStateComm(string(stat))
		if state == "Z" || state == "X" {
			continue
		}
		exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if err != nil {
			exe = "[" + comm + "]"
		}
		out = append(out, Survivor{PID: pid, Exe: exe})
	}
	return out
}

// statStateComm returns the state and command name fields of a
// /proc/PID/stat line.
func statStateComm(stat string) (state, comm string) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", ""
	}
	comm = stat[open+1 : end]
	if f := strings.Fields(stat[end+1:]); len(f) > 0 {
		state = f[0]
	}
	return state, comm
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// OwnCgroupDirs returns this process's cgroup directory in the v2
// hierarchy and, where a v1 hierarchy holds the pids controller (systemd's
// hybrid layout), in that one ("" when none does): what the runner itself
// finds at start, for the tests that make cgroups of their own.
func OwnCgroupDirs() (v2, pidsV1 string, err error) {
	mount, err := cgroup2Mount("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	own, err := ownCgroup2("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	if h, err := findPidsV1("/proc/self/mountinfo", "/proc/self/cgroup"); err == nil {
		pidsV1 = h.parent
	}
	return filepath.Join(mount, own), pidsV1, nil
}
