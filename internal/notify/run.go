package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/spawn"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// MaxRunning bounds the notifier processes running at once, over all
// requests and notifiers.
const MaxRunning = 16

// MaxOutput bounds the output of a failed notifier quoted in the log.
const MaxOutput = 512

// waitDelay is how long a notifier's output pipes stay open after it exited
// or was killed, for a process that left its group holding them.
const waitDelay = 2 * time.Second

// Set is the notifiers of one configuration, ready to run: built by
// [Prepare] when the daemon starts and on every reload, and never changed.
type Set struct {
	cmds    []command
	paths   []string // each program's real path, resolved by Prepare
	target  runner.Target
	timeout time.Duration
	path    string // PATH in their environment
}

// Len returns the number of notifiers in s; a nil Set has none.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.cmds)
}

// Prepare checks and compiles the notifiers cmds (key notify) to run as
// user (notify_user) for at most timeout (notify_timeout) each, with
// securePath as their PATH. With no notifiers it checks nothing else and
// returns an empty Set. Otherwise every program must be a regular
// executable file that only root can change, along every directory and
// symlink leading to it (runner.Resolve), and user must exist and not be
// root. Errors name the notifier ("notify[1]") or the key.
func Prepare(cmds [][]string, user string, timeout time.Duration, securePath string) (*Set, error) {
	s := &Set{timeout: timeout, path: securePath}
	if len(cmds) == 0 {
		return s, nil
	}
	var errs []error
	for i, argv := range cmds {
		c, err := compile(fmt.Sprintf("notify[%d]", i), argv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r, err := runner.Resolve(c.argv0, securePath)
		if err != nil {
			errs = append(errs, fmt.Errorf("notify[%d][0]: %w", i, err))
			continue
		}
		if len(r.Untrusted) > 0 {
			w := r.Untrusted[0]
			errs = append(errs, hint.Wrap(fmt.Errorf("notify[%d][0]: %s can be changed by someone other than root (%s: %s)",
				i, termtext.EscStrict(c.argv0), termtext.EscStrict(w.Path), w.Why),
				"whoever can change it could run what they like as the notify user: install the notifier where only root can write"))
			continue
		}
		s.cmds = append(s.cmds, c)
		s.paths = append(s.paths, r.Path)
	}
	t, err := runner.LookupTarget(user)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("notify_user: %w", err))
	case t.UID == 0:
		errs = append(errs, fmt.Errorf("notify_user: %q is root; notifiers never run as root", user))
	}
	s.target = t
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// Env returns the environment a notifier gets when it runs as t, with path
// as PATH, besides HOME=/ which package spawn sets: exactly PATH, USER,
// LOGNAME, LANG=C.UTF-8 and, when /run/user/UID is a directory t owns,
// XDG_RUNTIME_DIR set to it and, when it holds a socket named bus,
// DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/UID/bus (so that
// notify-send reaches t's desktop session).
func Env(t runner.Target, path string) []string { return envIn("/run/user", t, path) }

// envIn is Env with runUser in place of /run/user.
func envIn(runUser string, t runner.Target, path string) []string {
	env := []string{"PATH=" + path, "USER=" + t.Name, "LOGNAME=" + t.Name, "LANG=C.UTF-8"}
	dir := runUser + "/" + strconv.FormatUint(uint64(t.UID), 10)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return env
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != t.UID {
		return env
	}
	env = append(env, "XDG_RUNTIME_DIR="+dir)
	if bi, err := os.Lstat(dir + "/bus"); err == nil && bi.Mode().Type() == os.ModeSocket {
		env = append(env, "DBUS_SESSION_BUS_ADDRESS=unix:path="+dir+"/bus")
	}
	return env
}

// Runner runs notifiers, at most MaxRunning at once. Create it with
// NewRunner; Wait waits for every notifier it started.
type Runner struct {
	log   *slog.Logger
	slots chan struct{}
	wg    sync.WaitGroup
}

// NewRunner returns a Runner that logs on log (nil discards).
func NewRunner(log *slog.Logger) *Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{log: log, slots: make(chan struct{}, MaxRunning)}
}

// Start runs every notifier of s for the request v, each in a goroutine of
// its own, and returns at once. A notifier that would be one more than
// MaxRunning running is not started (logged). Cancelling ctx kills the
// notifiers still running, as their timeout does.
func (r *Runner) Start(ctx context.Context, s *Set, v Values) {
	if s.Len() == 0 {
		return
	}
	vals := v.escaped()
	for i, c := range s.cmds {
		log := r.log.With("notifier", i, "program", termtext.EscStrict(c.argv0), "id", vals["id"])
		select {
		case r.slots <- struct{}{}:
		default:
			log.Warn("notifier not run: too many notifiers are running already", "max_running", MaxRunning)
			continue
		}
		argv := c.expand(vals)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() { <-r.slots }()
			r.run(ctx, log, s, s.paths[i], argv)
		}()
	}
}

// Wait blocks until every notifier started has ended.
func (r *Runner) Wait() { r.wg.Wait() }

// run runs one notifier and logs how it ended.
func (r *Runner) run(ctx context.Context, log *slog.Logger, s *Set, path string, argv []string) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	out := &capped{max: MaxOutput}
	err := spawn.Run(ctx, spawn.Cmd{
		Path: path, Args: argv,
		UID: s.target.UID, GID: s.target.GID, Groups: s.target.Groups,
		Env:       Env(s.target, s.path),
		Output:    out,
		WaitDelay: waitDelay,
	})
	switch {
	case err == nil:
		log.Debug("notifier ran")
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		log.Warn("notifier timed out: its process group was killed", "notify_timeout", s.timeout.String(), "output", termtext.Esc(out.String()))
	case ctx.Err() != nil:
		log.Info("notifier killed: the daemon is stopping", "output", termtext.Esc(out.String()))
	default:
		log.Warn("notifier failed", "err", termtext.Esc(err.Error()), "output", termtext.Esc(out.String()))
	}
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	mu      sync.Mutex
	max     int
	buf     bytes.Buffer
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
		return len(p), nil
	}
	c.buf.Write(p[:max(room, 0)])
	c.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped > 0 {
		return fmt.Sprintf("%s... (%d more bytes)", c.buf.String(), c.dropped)
	}
	return c.buf.String()
}
