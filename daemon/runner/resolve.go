package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSymlinks bounds the symlinks followed while resolving one path, as the
// kernel does (ELOOP after 40).
const maxSymlinks = 40

// Resolved is a program name resolved to the file that will run.
type Resolved struct {
	// Path is the absolute, symlink-free path of the program file. It is
	// what the approver is shown as the program and what [Run] executes.
	Path string
	// Link is the absolute path the name led to before symlinks were
	// followed: argv0 itself when it contains a slash, else the match in
	// the secure path. It equals Path when no symlink was involved. It is
	// for display ("iptables -> /usr/sbin/iptables -> /usr/sbin/xtables-
	// legacy-multi") and lets sudo mode keep a multi-call binary's name.
	Link string
}

// Resolve finds the program that argv0 names.
//
// A name containing '/' must be an absolute path; a relative one is refused,
// because it would depend on a working directory the approver does not see.
// A bare name is looked up in the directories of securePath only, in order,
// never in the daemon's PATH; as with execvp, an entry that is not a regular
// executable file is skipped. Symlinks are followed: the program must be a
// regular file with at least one execute bit.
//
// The daemon executes [Resolved.Path], the real file, rather than the name, so
// that repointing a symlink after approval cannot change what runs; argv[0]
// stays the name the agent gave, because multi-call binaries such as busybox
// and xtables-legacy-multi dispatch on it. See the package documentation for
// how sudo mode keeps argv[0].
func Resolve(argv0, securePath string) (Resolved, error) {
	switch {
	case argv0 == "":
		return Resolved{}, errors.New("runner: empty program name")
	case strings.IndexByte(argv0, 0) >= 0:
		return Resolved{}, fmt.Errorf("runner: program name %q contains a NUL byte", argv0)
	case strings.Contains(argv0, "/"):
		if !filepath.IsAbs(argv0) {
			return Resolved{}, fmt.Errorf("runner: program %q is a relative path; give an absolute path, or a bare name to look up in the secure path", argv0)
		}
		return resolveFile(argv0)
	case argv0 == "." || argv0 == "..":
		return Resolved{}, fmt.Errorf("runner: %q is not a program name", argv0)
	}
	if err := ValidSecurePath(securePath); err != nil {
		return Resolved{}, fmt.Errorf("runner: looking up %q: %w", argv0, err)
	}
	var firstErr error
	for dir := range strings.SplitSeq(securePath, ":") {
		r, err := resolveFile(filepath.Join(dir, argv0))
		if err == nil {
			return r, nil
		}
		if firstErr == nil && !errors.Is(err, fs.ErrNotExist) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return Resolved{}, firstErr
	}
	return Resolved{}, fmt.Errorf("runner: program %q not found in the secure path %s", argv0, securePath)
}

// resolveFile resolves the absolute path p and checks that it is a regular
// executable file.
func resolveFile(p string) (Resolved, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return Resolved{}, fmt.Errorf("runner: resolving program %s: %w", p, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return Resolved{}, fmt.Errorf("runner: program %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return Resolved{}, fmt.Errorf("runner: program %s (%s) is not a regular file", p, real)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return Resolved{}, fmt.Errorf("runner: program %s (%s) is not executable", p, real)
	}
	return Resolved{Path: real, Link: p}, nil
}

// walkTrusted resolves the absolute path p component by component, as the
// kernel does, and returns the symlink-free result. trusted reports whether
// every directory in which a name was looked up is owned by root and not
// writable by group or others, so that only root can change what p resolves
// to. The final file itself is not judged: the question is whether p still
// leads to the same file, not what that file contains.
func walkTrusted(p string) (real string, trusted bool, err error) {
	if !filepath.IsAbs(p) {
		return "", false, fmt.Errorf("path %q is not absolute", p)
	}
	trusted = true
	cur := "/" // symlink-free directory reached so far
	todo := strings.Split(p, "/")
	for links := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			// cur has no symlinks, so its lexical parent is its real one.
			cur = filepath.Dir(cur)
			continue
		}
		if !rootOnlyDir(cur) {
			trusted = false
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", false, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(todo) > 0 && !fi.IsDir() {
				return "", false, &fs.PathError{Op: "walk", Path: next, Err: syscall.ENOTDIR}
			}
			cur = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", false, &fs.PathError{Op: "walk", Path: p, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", false, err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, trusted, nil
}

// rootOnlyDir reports whether the directory dir is owned by root and
// writable by nobody else.
func rootOnlyDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0 && fi.Mode().Perm()&0o022 == 0
}
