package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/spawn"
)

// SudoKind is a sudo implementation, as its --version names it. The two
// take the approved environment differently (docs/execution.md, "Direct
// mode and sudo mode").
type SudoKind string

const (
	// SudoOriginal is sudo from sudo.ws ("Sudo version 1.9.16p2"): the
	// environment is sudo's own, and --preserve-env=LIST names every
	// variable of it, so that the values stay out of argv.
	SudoOriginal SudoKind = "sudo"
	// SudoRS is sudo-rs ("sudo-rs 0.2.5"), which ignores
	// --preserve-env=LIST (0.2.5 warns on stderr and drops it): the
	// environment is given as NAME=value words before "--", which sudo-rs
	// applies over its own when the rule allows setting variables (a rule
	// whose command is ALL, as root's in the default sudoers) and otherwise
	// refuses the command, saying which variables.
	SudoRS SudoKind = "sudo-rs"
)

// The oldest versions sudo mode accepts: sudo 1.8.21 is the first with
// --preserve-env=LIST; sudo-rs 0.2.5 (Debian 13's) is the oldest tested
// with NAME=value words.
var (
	minSudo   = [3]int{1, 8, 21}
	minSudoRS = [3]int{0, 2, 5}
)

// SudoImpl is which sudo a path runs.
type SudoImpl struct {
	// Kind is the implementation.
	Kind SudoKind
	// Version is its version as --version printed it ("1.9.16p2", "0.2.5").
	Version string
}

// String is how the daemon names the implementation: "sudo 1.9.16p2".
func (i SudoImpl) String() string { return string(i.Kind) + " " + i.Version }

var (
	sudoVersionLine   = regexp.MustCompile(`^Sudo version ([0-9]+)\.([0-9]+)\.([0-9]+)((?:p[0-9]+)?)$`)
	sudoRSVersionLine = regexp.MustCompile(`^sudo-rs ([0-9]+)\.([0-9]+)\.([0-9]+)((?:[-+~][0-9A-Za-z.+~-]*)?)$`)
)

// ParseSudoVersion tells the implementation from the first line of
// `sudo --version`. It fails for a line that names neither sudo nor
// sudo-rs, and for a version older than sudo mode supports, saying which.
func ParseSudoVersion(line string) (SudoImpl, error) {
	kind, min, m := SudoOriginal, minSudo, sudoVersionLine.FindStringSubmatch(line)
	if m == nil {
		kind, min, m = SudoRS, minSudoRS, sudoRSVersionLine.FindStringSubmatch(line)
	}
	if m == nil {
		return SudoImpl{}, hint.Wrap(fmt.Errorf("its --version says %q, which is neither sudo nor sudo-rs", line),
			"the daemon knows how sudo (\"Sudo version 1.9.16p2\") and sudo-rs (\"sudo-rs 0.2.5\") pass the approved environment to the command, "+
				"and uses no other program")
	}
	var v [3]int
	for i := range v {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return SudoImpl{}, fmt.Errorf("its --version says %q: version number %q: %w", line, m[i+1], err)
		}
		v[i] = n
	}
	impl := SudoImpl{Kind: kind, Version: m[1] + "." + m[2] + "." + m[3] + m[4]}
	for i := range v {
		if v[i] != min[i] {
			if v[i] < min[i] {
				return SudoImpl{}, fmt.Errorf("it is %s, and sudo mode needs %s %d.%d.%d or newer to pass the approved environment to the command",
					impl, kind, min[0], min[1], min[2])
			}
			break
		}
	}
	return impl, nil
}

// sudoProbeTimeout bounds `sudo --version`.
const sudoProbeTimeout = 10 * time.Second

// maxVersionOutput caps what is read of `sudo --version`.
const maxVersionOutput = 64 << 10

// probePath is the environment of `sudo --version` besides the HOME=/ of
// [spawn.Run]: none of the daemon's, but not empty either, as sudo 1.9.16p2
// (Debian 13's) crashes with an empty environment.
const probePath = "PATH=/usr/sbin:/usr/bin:/sbin:/bin"

// probeUser runs `sudo --version`: it needs no privilege, and the daemon
// starts no helper as root ([spawn.Run]).
const probeUser = "nobody"

// ProbeSudo runs `path --version` through [spawn.Run] (no shell, as
// nobody, in "/", with only PATH and HOME in its environment) and tells
// which implementation path is from the first line of its output (stdout
// and stderr: sudo-rs 0.2.5 prints its version on stderr) that names one
// ([ParseSudoVersion]); without such a line, from its first line.
func ProbeSudo(ctx context.Context, path string) (SudoImpl, error) {
	ctx, cancel := context.WithTimeout(ctx, sudoProbeTimeout)
	defer cancel()
	who, err := LookupTarget(probeUser)
	if err != nil {
		return SudoImpl{}, fmt.Errorf("sudo_path %s: the user to ask its --version as: %w", path, err)
	}
	var out capped
	err = spawn.Run(ctx, spawn.Cmd{
		Path: path, Args: []string{path, "--version"},
		UID: who.UID, GID: who.GID, Groups: []uint32{},
		Env: []string{probePath}, Output: &out,
	})
	if err != nil {
		if msg := strings.TrimSpace(out.String()); msg != "" {
			return SudoImpl{}, fmt.Errorf("sudo_path %s: %s --version: %w (it said %q)", path, path, err, firstLine(msg))
		}
		return SudoImpl{}, fmt.Errorf("sudo_path %s: %s --version: %w", path, path, err)
	}
	line := firstLine(out.String())
	for l := range strings.Lines(out.String()) {
		if strings.HasPrefix(l, "Sudo version ") || strings.HasPrefix(l, "sudo-rs ") {
			line = strings.TrimRight(l, "\r\n")
			break
		}
	}
	impl, err := ParseSudoVersion(line)
	if err != nil {
		return SudoImpl{}, fmt.Errorf("sudo_path %s: %w", path, err)
	}
	return impl, nil
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSuffix(line, "\r")
}

// capped keeps the first maxVersionOutput bytes written to it and drops
// the rest.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxVersionOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Sudo is the sudo of sudo mode: its path and the implementation found
// there. [Sudo.Impl] checks, before each pipeline, that the path still
// leads to the file that was probed, and probes again when it does not (a
// sudo upgrade, or sudo-rs put in sudo's place), so that a pipeline is
// never given its environment in the way of another implementation. It is
// safe for concurrent use.
type Sudo struct {
	path string

	mu   sync.Mutex
	id   sudoID
	impl SudoImpl
}

// sudoID identifies the file at a path and its content: a file replaced
// or written to gets another.
type sudoID struct {
	id    fileID
	stamp fileStamp
}

func statID(path string) (sudoID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return sudoID{}, err
	}
	return sudoID{id: fileID{dev: st.Dev, ino: st.Ino}, stamp: stampOf(&st)}, nil
}

// OpenSudo probes the sudo at path ([ProbeSudo]); it fails when path is
// not a sudo or sudo-rs that sudo mode can pass the approved environment
// through, saying why.
func OpenSudo(ctx context.Context, path string) (*Sudo, error) {
	s := &Sudo{path: path}
	if _, err := s.Impl(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Path is the path the sudo was probed at.
func (s *Sudo) Path() string { return s.path }

// Impl is the implementation at the path now: the one probed before when
// the path still leads to the same file (same device, inode, size, times,
// mode and owner), probed again otherwise. An error means that no pipeline
// may run through it.
func (s *Sudo) Impl(ctx context.Context) (SudoImpl, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before, err := statID(s.path)
	if err != nil {
		return SudoImpl{}, fmt.Errorf("sudo_path %s: %w", s.path, err)
	}
	if s.impl.Kind != "" && before == s.id {
		return s.impl, nil
	}
	s.impl = SudoImpl{}
	impl, err := ProbeSudo(ctx, s.path)
	if err != nil {
		return SudoImpl{}, err
	}
	after, err := statID(s.path)
	if err != nil {
		return SudoImpl{}, fmt.Errorf("sudo_path %s: %w", s.path, err)
	}
	if after != before {
		return SudoImpl{}, errors.New("sudo_path " + s.path + " changed while the daemon was checking which sudo it is; try again")
	}
	s.id, s.impl = before, impl
	return impl, nil
}
