package procinfo

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Namespaces names the namespace kinds compared with the daemon's, in the
// order they are shown.
var Namespaces = []string{"user", "pid", "mnt", "net", "uts", "ipc", "cgroup"}

// Container is the identity of a peer that lives in namespaces other than
// the daemon's: a container, a sandbox, a bind-mounted socket reached from
// "unshare". Every field is read from /proc by the daemon.
type Container struct {
	// NS holds the inode number of each of the peer's namespaces (by kind,
	// as in Namespaces) that differs from the daemon's.
	NS map[string]uint64 `json:"ns"`
	// InnerUID is the peer's uid inside its user namespace, from its
	// uid_map; nil when the peer is in the daemon's user namespace or the
	// map has no entry for its uid.
	InnerUID *uint32 `json:"inner_uid,omitempty"`
	// InnerPID is the peer's pid in its own pid namespace (the last NSpid
	// of /proc/PID/status); 0 when unknown.
	InnerPID int32 `json:"inner_pid,omitempty"`
	// InitPID is the daemon-side pid of the first process of the peer's
	// pid namespace (its "init"), found among the peer's ancestors; 0 when
	// the pid namespace is the daemon's or the init was not found.
	InitPID int32 `json:"init_pid,omitempty"`
	// Cgroup is the cgroup of InitPID (of the peer when InitPID is 0): the
	// unified hierarchy's path ("0::/...") when there is one, else the
	// first line of /proc/PID/cgroup.
	Cgroup string `json:"cgroup,omitempty"`
	// Controller is the uid the daemon counts the peer as for its per-user
	// limits when that is not the peer's own uid: the owner of the
	// outermost user namespace a non-root user created around it
	// (peercred.Creds.Controller; docs/config.md, "Who counts as one
	// user"). Nil when it is the peer's uid.
	Controller *uint32 `json:"controller_uid,omitempty"`
}

// nsInode reads /proc/PID/ns/KIND ("pid:[4026531836]").
func (p Proc) nsInode(pid int32, kind string) (uint64, error) {
	t, err := os.Readlink(p.path(pid, "ns/"+kind))
	if err != nil {
		return 0, err
	}
	return parseNSLink(t)
}

// parseNSLink parses a namespace link target, "kind:[inode]".
func parseNSLink(t string) (uint64, error) {
	i := strings.IndexByte(t, '[')
	if i < 0 || !strings.HasSuffix(t, "]") {
		return 0, fmt.Errorf("malformed namespace link %q", t)
	}
	n, err := strconv.ParseUint(t[i+1:len(t)-1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed namespace link %q: %w", t, err)
	}
	return n, nil
}

// Container returns pid's container identity when it lives in a user,
// pid or mount namespace other than the daemon's (/proc/self), or nil when
// it shares all three or they cannot be read. uid is the peer's uid as the
// kernel reported it to the daemon. Only the ancestors walked by ctx's
// deadline are searched for the init.
func (p Proc) Container(ctx context.Context, pid int32, uid uint32) *Container {
	ns := make(map[string]uint64)
	foreign := false
	for _, kind := range Namespaces {
		theirs, err := p.nsInode(pid, kind)
		if err != nil {
			continue
		}
		ours, ok := p.ownNS(kind)
		if !ok || ours == theirs {
			continue
		}
		ns[kind] = theirs
		if kind == "user" || kind == "pid" || kind == "mnt" {
			foreign = true
		}
	}
	if !foreign {
		return nil
	}
	c := &Container{NS: ns}
	if _, ok := ns["user"]; ok {
		if b, _, err := readBounded(p.path(pid, "uid_map")); err == nil {
			if in, ok := innerID(b, uid); ok {
				c.InnerUID = &in
			}
		}
	}
	if nspid := p.nsPIDs(pid); len(nspid) > 1 {
		c.InnerPID = nspid[len(nspid)-1]
	}
	if _, ok := ns["pid"]; ok {
		c.InitPID = p.findInit(ctx, pid, ns["pid"])
	}
	cg := pid
	if c.InitPID != 0 {
		cg = c.InitPID
	}
	if b, _, err := readBounded(p.path(cg, "cgroup")); err == nil {
		c.Cgroup = cgroupOf(b)
	}
	return c
}

// ownNS is the reader's own namespace of kind: from Own when it is set,
// else from /proc/self.
func (p Proc) ownNS(kind string) (uint64, bool) {
	if p.Own != nil {
		n, ok := p.Own[kind]
		return n, ok
	}
	n, err := p.nsInode(self, kind)
	return n, err == nil
}

// findInit walks up from pid to the process whose pid is 1 in pid
// namespace pidNS, or returns 0.
func (p Proc) findInit(ctx context.Context, pid int32, pidNS uint64) int32 {
	for range 4 * MaxDepth {
		if ctx.Err() != nil || pid <= 0 {
			return 0
		}
		if n, err := p.nsInode(pid, "pid"); err != nil || n != pidNS {
			return 0
		}
		nspid := p.nsPIDs(pid)
		if len(nspid) > 1 && nspid[len(nspid)-1] == 1 {
			return pid
		}
		b, _, err := readBounded(p.path(pid, "stat"))
		if err != nil {
			return 0
		}
		st, err := parseStat(b)
		if err != nil {
			return 0
		}
		pid = st.ppid
	}
	return 0
}

// nsPIDs reads the NSpid line of /proc/PID/status: the pid in each nested
// pid namespace, the daemon's view first.
func (p Proc) nsPIDs(pid int32) []int32 {
	b, _, err := readBounded(p.path(pid, "status"))
	if err != nil {
		return nil
	}
	return parseNSpid(b)
}

// parseNSpid returns the numbers of the NSpid line of a status file, or
// nil when it has none or one is malformed.
func parseNSpid(b []byte) []int32 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "NSpid:")
		if !ok {
			continue
		}
		var out []int32
		for _, f := range strings.Fields(rest) {
			n, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				return nil
			}
			out = append(out, int32(n))
		}
		return out
	}
	return nil
}

// innerID maps id, as seen from the reader's namespace, back through a
// uid_map or gid_map ("inside outside count" per line, outside being the
// reader's view): the id inside the namespace, and whether a line covered
// it.
func innerID(m []byte, id uint32) (uint32, bool) {
	for _, line := range strings.Split(string(m), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.ParseUint(f[0], 10, 32)
		out, err2 := strconv.ParseUint(f[1], 10, 32)
		n, err3 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		if uint64(id) >= out && uint64(id)-out < n {
			return uint32(in + (uint64(id) - out)), true
		}
	}
	return 0, false
}

// cgroupOf picks the line of /proc/PID/cgroup to show: the unified
// hierarchy's path when there is one, else the first line; bounded to
// MaxArg*2 bytes.
func cgroupOf(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	pick := lines[0]
	for _, l := range lines {
		if strings.HasPrefix(l, "0::") {
			pick = l
			break
		}
	}
	if len(pick) > 2*MaxArg {
		pick = pick[:2*MaxArg] + "…"
	}
	return pick
}
