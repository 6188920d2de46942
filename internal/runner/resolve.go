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
	// Chain is every path on the way from Link to Path, both included:
	// after Link, each symlink's target (prefixed by the link's directory
	// when relative, followed by the rest of the path), then Path. It has
	// one element when no symlink was involved. It is a list, never a
	// joined string, so that a file name containing " -> " cannot forge a
	// hop.
	Chain []string
	// Untrusted lists what someone other than root can write that decides
	// what runs: every directory in which a name on the way was looked up
	// and the program file itself, when not owned by root or writable by
	// group or others. Empty means only root could change what Link runs.
	Untrusted []Writable
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
// and xtables-legacy-multi dispatch on it. See docs/execution.md for
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
		// The rules compare the path as a string, and the approver reads
		// it: "/usr/bin//cat" or "/usr/bin/../bin/cat" would match no rule
		// written for /usr/bin/cat and read as something it is not, so only
		// the clean spelling is accepted.
		if clean := filepath.Clean(argv0); clean != argv0 {
			return Resolved{}, fmt.Errorf(`runner: program path %q is not clean ("//", "/./", "/../" or a trailing "/"); write it %q`, argv0, clean)
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
	w, err := walk(p)
	if err != nil {
		return Resolved{}, fmt.Errorf("runner: resolving program %s: %w", p, err)
	}
	fi, err := os.Stat(w.real)
	if err != nil {
		return Resolved{}, fmt.Errorf("runner: program %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return Resolved{}, fmt.Errorf("runner: program %s (%s) is not a regular file", p, w.real)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return Resolved{}, fmt.Errorf("runner: program %s (%s) is not executable", p, w.real)
	}
	untrusted := w.untrusted
	if why := nonRootWritable(fi); why != "" {
		untrusted = append(untrusted, Writable{Path: w.real, Why: "the program file is " + why})
	}
	return Resolved{Path: w.real, Link: p, Chain: w.chain, Untrusted: untrusted}, nil
}

// Writable is a path whose owner or mode lets someone other than root change
// what a request runs or where: a directory in which a name was looked up, or
// the program file itself.
type Writable struct {
	// Path is the directory or file.
	Path string `json:"path"`
	// Why says who can write it, from its owner and mode only (never from
	// the path), e.g. "the directory is owned by uid 1001".
	Why string `json:"why"`
}

// walked is what walk found.
type walked struct {
	// real is the symlink-free result.
	real string
	// chain is every path on the way: the path given, then after each
	// symlink the path the kernel continues with (the link's target,
	// prefixed by its directory when relative, followed by the rest of the
	// path), then real when it differs from the last of these.
	chain []string
	// untrusted lists each directory in which a name was looked up that is
	// not owned by root or is writable by group or others, once each.
	untrusted []Writable
}

// walk resolves the absolute path p component by component, as the kernel
// does, recording each hop and each directory that someone other than root
// could change.
func walk(p string) (walked, error) {
	if !filepath.IsAbs(p) {
		return walked{}, fmt.Errorf("path %q is not absolute", p)
	}
	w := walked{chain: []string{p}}
	seen := map[string]bool{}
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
		if !seen[cur] {
			seen[cur] = true
			if why := dirNotRootOnly(cur); why != "" {
				w.untrusted = append(w.untrusted, Writable{Path: cur, Why: "the directory " + why})
			}
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return walked{}, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(todo) > 0 && !fi.IsDir() {
				return walked{}, &fs.PathError{Op: "walk", Path: next, Err: syscall.ENOTDIR}
			}
			cur = next
			continue
		}
		if links++; links > maxSymlinks {
			return walked{}, &fs.PathError{Op: "walk", Path: p, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return walked{}, err
		}
		hop := target
		if !filepath.IsAbs(target) {
			hop = strings.TrimSuffix(cur, "/") + "/" + target
		}
		if rest := strings.Join(todo, "/"); rest != "" {
			hop = strings.TrimSuffix(hop, "/") + "/" + rest
		}
		w.chain = append(w.chain, hop)
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	w.real = cur
	if w.chain[len(w.chain)-1] != cur {
		w.chain = append(w.chain, cur)
	}
	return w, nil
}

// walkTrusted resolves the absolute path p as walk does and reports whether
// every directory in which a name was looked up is owned by root and not
// writable by group or others, so that only root can change what p resolves
// to. The final file itself is not judged: the question is whether p still
// leads to the same file, not what that file contains.
func walkTrusted(p string) (real string, trusted bool, err error) {
	w, err := walk(p)
	if err != nil {
		return "", false, err
	}
	return w.real, len(w.untrusted) == 0, nil
}

// dirNotRootOnly says why the directory dir could be changed by someone
// other than root, or returns "" when it cannot.
func dirNotRootOnly(dir string) string {
	fi, err := os.Lstat(dir)
	if err != nil {
		return "cannot be examined: " + err.Error()
	}
	if !fi.IsDir() {
		return "is not a directory"
	}
	if why := nonRootWritable(fi); why != "" {
		return "is " + why
	}
	return ""
}

// nonRootWritable says who other than root can write the file or directory
// fi describes ("owned by uid 1001", "writable by group 27", "writable by
// everyone"), or returns "" when nobody but root can.
func nonRootWritable(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "of unknown ownership"
	}
	var why []string
	if st.Uid != 0 {
		why = append(why, fmt.Sprintf("owned by uid %d", st.Uid))
	}
	if fi.Mode().Perm()&0o020 != 0 {
		why = append(why, fmt.Sprintf("writable by group %d", st.Gid))
	}
	if fi.Mode().Perm()&0o002 != 0 {
		w := "writable by everyone"
		if fi.Mode()&fs.ModeSticky != 0 {
			w += " (sticky)"
		}
		why = append(why, w)
	}
	return strings.Join(why, ", ")
}

// ResolveDir resolves the absolute directory path dir: its symlink-free
// path, the chain of hops to it (as for a program) and, in Untrusted, the
// directory itself when someone other than root can write it. Directories
// above it do not matter: the stages enter it through a descriptor opened
// at once ([OpenDir]), so renaming them later changes nothing.
func ResolveDir(dir string) (Resolved, error) {
	if !filepath.IsAbs(dir) {
		return Resolved{}, fmt.Errorf("runner: directory %q is not an absolute path", dir)
	}
	if strings.IndexByte(dir, 0) >= 0 {
		return Resolved{}, fmt.Errorf("runner: directory %q contains a NUL byte", dir)
	}
	w, err := walk(dir)
	if err != nil {
		return Resolved{}, fmt.Errorf("runner: resolving directory %s: %w", dir, err)
	}
	fi, err := os.Stat(w.real)
	if err != nil {
		return Resolved{}, fmt.Errorf("runner: directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return Resolved{}, fmt.Errorf("runner: %s (%s) is not a directory", dir, w.real)
	}
	r := Resolved{Path: w.real, Link: dir, Chain: w.chain}
	if why := nonRootWritable(fi); why != "" {
		r.Untrusted = []Writable{{Path: w.real, Why: "the directory is " + why}}
	}
	return r, nil
}
