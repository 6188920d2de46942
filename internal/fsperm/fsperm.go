// Package fsperm checks that a file or directory the daemon trusts can be
// changed only by root or by the daemon's own user.
//
// The daemon reads its configuration from a file and writes its logs to
// files in directories; whoever else could write one of them could grant
// themselves root (the configuration), rewrite the record of what ran (the
// audit log), or make the daemon's writes land in a file of their choosing
// (a second hard link). So each is refused, with a message that names it,
// says what is wrong and how to fix it, when
//
//   - it is not what it should be (a regular file, a directory);
//   - it is owned by someone other than root or the process's effective
//     user (a file root owns is trusted whoever runs the daemon), or, for
//     a file the process writes as its own ([OwnFile]), by anyone but
//     that user;
//   - group or others may write it;
//   - it is a regular file with more than one link;
//   - its ownership cannot be read (no syscall.Stat_t): the check fails
//     closed rather than passing what it cannot see.
//
// The functions only look at an [fs.FileInfo]; the caller gets it from the
// descriptor it will read or write (File.Stat), so that what is checked is
// what is used.
package fsperm

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agent-sudo/agent-sudo/internal/hint"
)

// File returns nil when fi describes a regular file with one link that only
// root or this process's user can change, and otherwise an error that
// begins with what (such as "config file /etc/x.toml") and gives why (what
// another writer could do, such as "whoever can write it can grant
// themselves root").
func File(what string, fi fs.FileInfo, why string) error {
	return file(what, fi, why, true)
}

// OwnFile is [File] for a file this process writes as its own, such as its
// log: it must be owned by this process's user, even when that is not root.
func OwnFile(what string, fi fs.FileInfo, why string) error {
	return file(what, fi, why, false)
}

// Dir returns nil when fi describes a directory that only root or this
// process's user can change, and otherwise an error as [File] describes.
func Dir(what string, fi fs.FileInfo, why string) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", what)
	}
	_, err := check(what, fi, why, true)
	return err
}

func file(what string, fi fs.FileInfo, why string, rootOK bool) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (mode %v)", what, fi.Mode())
	}
	st, err := check(what, fi, why, rootOK)
	if err != nil {
		return err
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%s has %d hard links: %s; it must have exactly one, so that nothing written to it lands in another file", what, st.Nlink, why)
	}
	return nil
}

// check is the ownership and mode check: fi must be owned by this process's
// effective user, or by root when rootOK, and not writable by group or
// others.
func check(what string, fi fs.FileInfo, why string, rootOK bool) (*syscall.Stat_t, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%s: no ownership information: %s", what, why)
	}
	euid := os.Geteuid()
	switch {
	case int(st.Uid) == euid, rootOK && st.Uid == 0:
	case euid == 0:
		return nil, fmt.Errorf("%s is owned by uid %d, not root: %s; run chown root on it", what, st.Uid, why)
	case rootOK:
		return nil, fmt.Errorf("%s is owned by uid %d, neither root nor this process's user (uid %d): %s", what, st.Uid, euid, why)
	default:
		return nil, fmt.Errorf("%s is owned by uid %d, not this process's user (uid %d): %s", what, st.Uid, euid, why)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return nil, fmt.Errorf("%s is writable by group or others (mode %04o): %s; run chmod go-w on it", what, perm, why)
	}
	return st, nil
}

// SecureDir checks that only the daemon's user (and root) can change
// what is in dir: dir must be owned by the daemon's user and writable by
// nobody else, sticky bit or not (a sticky directory such as /tmp still
// lets anyone create names in it), and every directory above it must be
// owned by root or the daemon's user and either writable by nobody else
// or sticky (then nobody else can rename or remove the root-owned entry
// below it). Symbolic links on the way (such as /var/run -> /run) must be
// owned by root or the daemon's user; the directories they lead to are
// checked the same way. what names dir in errors, e.g. "socket directory".
func SecureDir(dir, what string) error {
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s %s: not an absolute path", what, dir)
	}
	if err := checkChain(dir, what, dir); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if real != dir {
		return checkChain(real, what, dir)
	}
	return nil
}

// checkChain checks path and every directory above it, as SecureDir
// describes; shown is the path named in errors.
func checkChain(path, what, shown string) error {
	self := uint32(os.Geteuid())
	for d, last := path, true; ; d, last = filepath.Dir(d), false {
		fi, err := os.Lstat(d)
		if err != nil {
			return fmt.Errorf("%s %s: %w", what, shown, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s %s: no ownership information for %s", what, shown, d)
		}
		link := fi.Mode()&fs.ModeSymlink != 0
		switch {
		case st.Uid != self && st.Uid != 0:
			return fmt.Errorf("%s %s: %s is owned by uid %d, not by root or the daemon's uid %d; whoever owns it can replace what the daemon puts there",
				what, shown, d, st.Uid, self)
		case link:
			// Checked where it leads, by the caller.
		case !fi.IsDir():
			return fmt.Errorf("%s %s: %s is not a directory", what, shown, d)
		case last && st.Uid != self:
			return fmt.Errorf("%s %s is owned by uid %d, not by the daemon's uid %d", what, shown, st.Uid, self)
		case last && fi.Mode().Perm()&0o022 != 0:
			sticky := ""
			if fi.Mode()&fs.ModeSticky != 0 {
				sticky = " (sticky, like /tmp: others can still create names in it)"
			}
			return hint.Wrap(fmt.Errorf("%s %s has mode %04o%s: others could plant or replace files there", what, shown, octal(fi.Mode()), sticky),
				"use a directory of its own with mode 0755, e.g. /run/agent-sudo")
		case !last && fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0:
			return fmt.Errorf("%s %s: %s has mode %04o and is not sticky: others could rename what is in it and put their own in its place",
				what, shown, d, octal(fi.Mode()))
		}
		if d == "/" {
			return nil
		}
	}
}

// octal is a mode as chmod writes it: the permission bits and the sticky bit.
func octal(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSticky != 0 {
		o |= 0o1000
	}
	return o
}

// Program returns nil when fi describes a regular file that only root or
// this process's user can change and that its owner may execute, and
// otherwise an error as [File] describes. It is for a program the daemon
// runs as itself; unlike [File] it allows more than one link, since the
// daemon reads the program and writes nothing to it.
func Program(what string, fi fs.FileInfo, why string) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (mode %v): %s", what, fi.Mode(), why)
	}
	if _, err := check(what, fi, why, true); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o100 == 0 {
		return fmt.Errorf("%s is not executable (mode %04o); run chmod u+x on it", what, fi.Mode().Perm())
	}
	return nil
}
