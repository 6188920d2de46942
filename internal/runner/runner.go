package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/spawn"
	"github.com/agent-sudo/agent-sudo/proto"
)

// Mode says how a pipeline gets the target user's identity: the
// configuration key "exec" (config.Config.Exec).
type Mode string

const (
	// ModeSudo runs every stage through the real sudo binary (SudoPath),
	// so that sudo's policy, PAM session and logging apply.
	ModeSudo Mode = "sudo"
	// ModeDirect makes the daemon start every stage with the target's
	// credentials itself, without sudo.
	ModeDirect Mode = "direct"
)

// Target is the user a pipeline runs as.
type Target struct {
	// Name is the user name; sudo mode passes it to sudo -u.
	Name string
	// UID and GID are the user's ids; direct mode runs with them.
	UID, GID uint32
	// Groups are the supplementary groups direct mode sets; empty means none.
	// sudo mode ignores them: sudo takes them from the group database.
	Groups []uint32
	// Home is the home directory, for HOME.
	Home string
}

// Command is one stage of a pipeline.
type Command struct {
	// Path is the absolute, symlink-free path of the file to execute, as
	// [Resolve] returned it in [Resolved.Path].
	Path string
	// Link is the absolute path the program was named by before symlinks
	// were resolved ([Resolved.Link]). Only sudo mode uses it, to keep a
	// multi-call binary's name (docs/execution.md, "What is approved is what runs"). Empty means
	// Path.
	Link string
	// Args is the argument vector. Args[0] is the program's name as the
	// agent gave it; in direct mode the program sees it as argv[0].
	Args []string
	// Program is the program file opened when the request was planned
	// ([OpenProgram]). When set, [Run] checks it again just before the
	// first stage starts (same device, inode and SHA-256) and direct mode
	// executes it through the descriptor, never by path; sudo mode, which
	// can only name a path, checks that the path it gives sudo leads to
	// the same file. The daemon always sets it; nil executes Path by path.
	Program *File
	// Chain and Untrusted are [Resolved.Chain] and [Resolved.Untrusted],
	// for the record.
	Chain     []string
	Untrusted []Writable
}

// Spec is everything [Run] needs to execute one approved pipeline.
type Spec struct {
	// Stages are the commands, in pipeline order; at least one and at most
	// [proto.MaxStages].
	Stages []Command
	// Env is the complete environment, from [BuildEnv]. Nothing else is
	// added, apart from what sudo itself adds in sudo mode; in sudo mode
	// it is passed in the way of the implementation [Spec.Sudo] finds
	// ([SudoKind]).
	Env []string
	// Dir is the working directory; it must be absolute, and "" means "/".
	Dir string
	// DirFile, when set, is Dir opened when the request was planned
	// ([OpenDir]); the stages enter it through the descriptor, so that a
	// path changed after approval cannot move them elsewhere. Dir is then
	// only for the record.
	DirFile *File
	// DirChain and DirUntrusted are the directory's [Resolved.Chain] (nil
	// without symlinks) and [Resolved.Untrusted], for the record.
	DirChain     []string
	DirUntrusted []Writable
	// Mode selects direct execution or sudo.
	Mode Mode
	// SudoPath is the absolute path of sudo; required in sudo mode.
	SudoPath string
	// Sudo is the sudo at SudoPath ([OpenSudo]); required in sudo mode.
	// Run asks it which implementation SudoPath runs just before the first
	// stage starts, and runs nothing when it cannot tell.
	Sudo *Sudo
	// Target is the user the stages run as.
	Target Target
	// Timeout bounds the pipeline's run time; it must be positive.
	Timeout time.Duration
	// KillGrace is how long the stages get between SIGTERM and SIGKILL once
	// the timeout has passed; zero means SIGKILL at once.
	KillGrace time.Duration
	// MaxOutput caps, in bytes, the captured stdout and each stage's captured
	// stderr. It must be positive; production uses [proto.MaxOutputBytes].
	MaxOutput int
	// Cgroups, when set, puts the pipeline in a cgroup of its own (see the
	// docs/execution.md, "One cgroup per pipeline"); nil runs it in process groups only.
	Cgroups *Cgroups
	// CgroupTag, when set, ends the name of the pipeline's cgroup, so that
	// a later daemon finding the cgroup left behind can tell whose it was
	// (the daemon puts the start of the request's audit ref there; see
	// [Cgroups.ReapStale]). At most 64 lower-case hex digits; anything
	// else fails the run before it starts.
	CgroupTag string
	// PidsMax, when positive, is the pids.max of the pipeline's cgroup:
	// how many processes and threads it may hold at once. It applies only
	// where Cgroups.EnablePids succeeded.
	PidsMax int
	// Stdin is written to the first stage's standard input, which is then
	// closed; empty means the first stage reads /dev/null.
	Stdin []byte
	// Live, when set, shows the end of the output while the stages run
	// (see [Live]); nil shows nothing.
	Live *Live

	// outputPipeSize, when set by a benchmark, is the capacity the output
	// pipes get (F_SETPIPE_SZ); zero keeps the kernel's default.
	outputPipeSize int
}

// StageResult is the outcome of one stage.
type StageResult struct {
	// ExitCode is the exit status, or 128+N when signal N killed the stage.
	ExitCode int
	// Stderr is what the stage wrote to stderr, at most Spec.MaxOutput
	// bytes; Result.Release frees it.
	Stderr *Output
	// StderrTruncated is set when stderr was longer than Spec.MaxOutput.
	StderrTruncated bool
	// StderrSHA256 is the SHA-256 of Stderr, computed as it was read.
	StderrSHA256 [32]byte
}

// Result is the outcome of a pipeline that was started.
type Result struct {
	// Stages has one entry per stage, in pipeline order.
	Stages []StageResult
	// Stdout is what the last stage wrote to stdout, at most Spec.MaxOutput
	// bytes; Release frees it.
	Stdout *Output
	// StdoutTruncated is set when stdout was longer than Spec.MaxOutput.
	StdoutTruncated bool
	// StdoutSHA256 is the SHA-256 of Stdout, computed as it was read.
	StdoutSHA256 [32]byte
	// TimedOut is set when the timeout elapsed or the context was cancelled
	// before every stage had exited; the stages were then killed. The caller
	// tells the two apart with ctx.Err().
	TimedOut bool
	// Started is when the first stage was about to start; Ended is when the
	// last process was reaped.
	Started, Ended time.Time
	// Survivors are the processes found alive in the pipeline's cgroup
	// after every stage had exited normally (it timed out: not listed);
	// they were killed. Only set when Spec.Cgroups was.
	Survivors []Survivor
	// CgroupError says what went wrong killing or removing the pipeline's
	// cgroup once it had run ("" when nothing did): a process may then
	// have outlived it.
	CgroupError string
}

// Release frees the memory that holds the output (Stdout and every
// Stderr), once no Output.Use of it is running; the daemon calls it once
// the response is written. Calling it more than once is harmless.
func (r *Result) Release() {
	r.Stdout.Release()
	for _, st := range r.Stages {
		st.Stderr.Release()
	}
}

// Use lends the output to f: stdout and each stage's stderr, valid until f
// returns (nil after Release). f must not keep them.
func (r *Result) Use(f func(stdout []byte, stderrs [][]byte)) {
	r.Stdout.Use(func(stdout []byte) {
		useAll(r.Stages, make([][]byte, 0, len(r.Stages)), func(stderrs [][]byte) { f(stdout, stderrs) })
	})
}

// useAll lends each stage's stderr in turn, appending it to got, and calls
// f with all of them.
func useAll(stages []StageResult, got [][]byte, f func([][]byte)) {
	if len(stages) == 0 {
		f(got)
		return
	}
	stages[0].Stderr.Use(func(b []byte) { useAll(stages[1:], append(got, b), f) })
}

// Run executes the pipeline s and waits until every process it started has
// exited and been reaped.
//
// An error means the pipeline did not run: s is invalid, ctx was already
// done, or a stage failed to start (stages already started are then killed
// and reaped). Once every stage has started, Run returns a Result and no
// error, also when stages fail or the pipeline times out.
func Run(ctx context.Context, s Spec) (*Result, error) {
	return run(ctx, s, hasControllingTerminal())
}

// run is Run with the process layout chosen by the caller: one process group
// for the pipeline, or a session per stage (docs/execution.md, "One process group, no terminal").
func run(ctx context.Context, s Spec, sessionPerStage bool) (*Result, error) {
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("runner: invalid spec: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("runner: pipeline not started: %w", err)
	}
	p := &pipeline{spec: s, sessionPerStage: sessionPerStage}
	return p.run(ctx)
}

// validate checks s without touching the file system.
func (s *Spec) validate() error {
	if len(s.Stages) == 0 {
		return errors.New("no stages")
	}
	if len(s.Stages) > proto.MaxStages {
		return fmt.Errorf("%d stages, at most %d allowed", len(s.Stages), proto.MaxStages)
	}
	for i, c := range s.Stages {
		if err := c.validate(); err != nil {
			return fmt.Errorf("stage %d: %w", i, err)
		}
	}
	seen := make(map[string]bool, len(s.Env))
	for _, kv := range s.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("environment entry %q has no '='", kv)
		}
		if !proto.ValidEnvName(name) {
			return fmt.Errorf("environment entry %q: invalid variable name", kv)
		}
		if strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("environment variable %s contains a NUL byte", name)
		}
		if seen[name] {
			return fmt.Errorf("environment variable %s is set twice", name)
		}
		seen[name] = true
	}
	if s.Dir != "" && !filepath.IsAbs(s.Dir) {
		return fmt.Errorf("working directory %q is not absolute", s.Dir)
	}
	if strings.IndexByte(s.Dir, 0) >= 0 {
		return errors.New("working directory contains a NUL byte")
	}
	switch s.Mode {
	case ModeDirect:
	case ModeSudo:
		if !filepath.IsAbs(s.SudoPath) || strings.IndexByte(s.SudoPath, 0) >= 0 {
			return fmt.Errorf("sudo path %q is not an absolute path", s.SudoPath)
		}
		if s.Sudo == nil {
			return fmt.Errorf("sudo mode without a probed sudo: which implementation %s is was never checked", s.SudoPath)
		}
		if s.Sudo.Path() != s.SudoPath {
			return fmt.Errorf("sudo path %q is not the probed sudo %q", s.SudoPath, s.Sudo.Path())
		}
		if strings.HasPrefix(s.Target.Name, "-") || strings.ContainsAny(s.Target.Name, "\x00\n") {
			return fmt.Errorf("target user name %q is not usable with sudo", s.Target.Name)
		}
	default:
		return fmt.Errorf("unknown mode %q", s.Mode)
	}
	if s.Timeout <= 0 {
		return fmt.Errorf("timeout %v is not positive", s.Timeout)
	}
	if s.KillGrace < 0 {
		return fmt.Errorf("kill grace %v is negative", s.KillGrace)
	}
	if s.MaxOutput <= 0 {
		return fmt.Errorf("output cap %d is not positive", s.MaxOutput)
	}
	return nil
}

func (c *Command) validate() error {
	if !filepath.IsAbs(c.Path) {
		return fmt.Errorf("program path %q is not absolute", c.Path)
	}
	if c.Link != "" && !filepath.IsAbs(c.Link) {
		return fmt.Errorf("program link %q is not absolute", c.Link)
	}
	if len(c.Args) == 0 {
		return errors.New("empty argument vector")
	}
	for _, a := range append([]string{c.Path, c.Link}, c.Args...) {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %q contains a NUL byte", a)
		}
	}
	return nil
}

// pipeline is the state of one Run.
type pipeline struct {
	spec            Spec
	sessionPerStage bool

	procs []*os.Process // started stages, in order
	pgids []int         // distinct process groups to signal
	cg    *cgroup       // the pipeline's cgroup, or nil
	// sudoPaths are, in sudo mode, the paths verifyPrograms checked and
	// sudo is given, one per stage.
	sudoPaths []string
	// sudo is, in sudo mode, the implementation at SudoPath, found just
	// before the stages start.
	sudo SudoKind

	stdout   capture
	stderrs  []capture
	readers  sync.WaitGroup
	readEnds []*os.File // the daemon's ends of the output pipes

	// writer feeds Spec.Stdin; closeAll unblocks it by closing its pipe.
	writer sync.WaitGroup

	// toClose holds every file the daemon still has open; closeAll closes
	// them all, whatever happened.
	toClose []*os.File
}

func (p *pipeline) run(ctx context.Context) (_ *Result, err error) {
	defer func() {
		// Normally every reader has stopped by now; after a failure to
		// set up, closing the pipes stops the readers that were started.
		p.closeAll()
		p.readers.Wait()
		p.writer.Wait()
		if err != nil {
			p.releaseCaptures()
		}
	}()
	n := len(p.spec.Stages)
	res := &Result{Started: time.Now()}

	if p.spec.Mode == ModeSudo {
		impl, err := p.spec.Sudo.Impl(ctx)
		if err != nil {
			return nil, fmt.Errorf("runner: pipeline not started: %w", err)
		}
		p.sudo = impl.Kind
	}
	if err := p.verifyPrograms(); err != nil {
		return nil, err
	}
	if p.spec.Cgroups != nil {
		cg, err := p.spec.Cgroups.create(p.spec.CgroupTag, p.spec.PidsMax)
		if err != nil {
			return nil, fmt.Errorf("runner: the pipeline needs a cgroup of its own and none could be made: %w", err)
		}
		p.cg = cg
		defer func() {
			if rerr := p.endCgroup(); rerr != nil && res != nil {
				res.CgroupError = rerr.Error()
			}
		}()
	}

	files, err := p.plumb()
	if err != nil {
		return nil, err
	}
	// Deferred after the cleanup above, so it runs first: nothing reads the
	// captures once Run is on its way out.
	p.spec.Live.attach(p)
	defer p.spec.Live.detach()
	for i := range n {
		err := p.start(i, files[i])
		// The child has its own copies now (or never will); the daemon must
		// not keep any, or readers would not see EOF nor writers SIGPIPE.
		for _, f := range files[i] {
			p.closeFile(f)
		}
		if err != nil {
			for _, later := range files[i+1:] {
				for _, f := range later {
					p.closeFile(f)
				}
			}
			p.signal(syscall.SIGKILL)
			if p.cg != nil {
				_ = p.cg.kill()
			}
			p.finishReading()
			for _, proc := range p.procs {
				_, _ = proc.Wait() // killed; only reaping is left
			}
			p.awaitGroupsGone()
			return nil, fmt.Errorf("runner: starting stage %d (%s): %w", i, p.spec.Stages[i].Path, err)
		}
	}

	exited := p.watchExits()
	timer := time.NewTimer(p.spec.Timeout - time.Since(res.Started))
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		res.TimedOut = true
	}
	select {
	case <-exited:
		res.TimedOut = false // finished as the time ran out: not killed
	default:
	}
	if res.TimedOut {
		p.signal(syscall.SIGTERM)
		grace := time.NewTimer(p.spec.KillGrace)
		select {
		case <-exited:
		case <-grace.C:
		}
		grace.Stop()
	}
	if !res.TimedOut && p.cg != nil {
		// Every stage has exited: whatever is still alive in the cgroup was
		// left behind, and is reported before it is killed.
		res.Survivors = p.cg.survivors(p.pids())
	}
	// Kill what is left of the group: the stages after the grace, or what
	// they left behind after a normal exit. The zombie leader still pins the
	// group id, so nothing else can be hit.
	p.signal(syscall.SIGKILL)
	if p.cg != nil {
		// The whole cgroup, including what left the process group: it
		// would otherwise hold the output pipes open.
		_ = p.cg.kill()
	}
	<-exited
	p.finishReading()

	res.Stages = make([]StageResult, n)
	for i, proc := range p.procs {
		st, err := proc.Wait()
		if err != nil {
			// Cannot happen for our own unreaped child; report it as a kill
			// rather than inventing an exit status.
			res.Stages[i].ExitCode = 128 + int(syscall.SIGKILL)
		} else {
			res.Stages[i].ExitCode = exitCode(st)
		}
		res.Stages[i].Stderr, res.Stages[i].StderrTruncated, res.Stages[i].StderrSHA256 = p.stderrs[i].result()
	}
	res.Stdout, res.StdoutTruncated, res.StdoutSHA256 = p.stdout.result()
	p.awaitGroupsGone()
	res.Ended = time.Now()
	return res, nil
}

// pids returns the stages' pids.
func (p *pipeline) pids() []int {
	pids := make([]int, len(p.procs))
	for i, proc := range p.procs {
		pids[i] = proc.Pid
	}
	return pids
}

// verifyPrograms checks every stage's program ([File.Verify]) and, in sudo
// mode, that the path sudo will be given still leads to it, before any stage
// starts: a pipeline with one changed program runs none of its stages.
func (p *pipeline) verifyPrograms() error {
	if p.spec.Mode == ModeSudo {
		p.sudoPaths = make([]string, len(p.spec.Stages))
		for i, c := range p.spec.Stages {
			p.sudoPaths[i] = sudoProgram(c)
		}
	}
	for i, c := range p.spec.Stages {
		if c.Program == nil {
			continue
		}
		err := c.Program.Verify()
		if err == nil && p.spec.Mode == ModeSudo {
			err = sameFile(p.sudoPaths[i], c.Program)
		}
		if err != nil {
			return fmt.Errorf("runner: stage %d (%s) not started: %w", i, c.Path, err)
		}
	}
	return nil
}

// start starts stage i with the given stdin, stdout and stderr; the caller
// has checked its program ([pipeline.verifyPrograms]).
func (p *pipeline) start(i int, stdio [3]*os.File) error {
	s := &p.spec
	c := s.Stages[i]
	sys := &syscall.SysProcAttr{}
	if p.cg != nil {
		// clone3 with CLONE_INTO_CGROUP: the child is in the cgroup from
		// its first instruction, before it execs, so nothing it forks can
		// start outside.
		sys.UseCgroupFD = true
		sys.CgroupFD = int(p.cg.fd.Fd())
	}
	if p.sessionPerStage {
		sys.Setsid = true
	} else {
		sys.Setpgid = true
		if i > 0 {
			sys.Pgid = p.pgids[0]
		}
	}
	// Descriptors a library opened without close-on-exec (an epoll
	// descriptor of the terminal reader, say) would otherwise leak into
	// every stage.
	spawn.MarkCloseOnExec()
	files := stdio[:]
	var prog string
	var argv []string
	switch s.Mode {
	case ModeDirect:
		prog, argv = c.Path, c.Args
		if c.Program != nil {
			// The kernel opens the file before it closes close-on-exec
			// descriptors, so a binary runs from its descriptor without
			// inheriting it. A script's interpreter opens the path it is
			// given after exec, so a script gets its descriptor as fd 3.
			if c.Program.Script {
				files = append(files, c.Program.F)
				prog = procFD(3)
			} else {
				fd, err := dupAbove(c.Program.F, files)
				if err != nil {
					return err
				}
				defer fd.Close()
				prog = procFD(fd.Fd())
			}
		}
		sys.Credential = &syscall.Credential{
			Uid:    s.Target.UID,
			Gid:    s.Target.GID,
			Groups: slices.Clone(s.Target.Groups),
		}
		if sys.Credential.Groups == nil {
			sys.Credential.Groups = []uint32{} // setgroups(0): drop root's groups
		}
	case ModeSudo:
		prog, argv = s.SudoPath, sudoArgv(s, p.sudo, p.sudoPaths[i], c.Args)
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	if s.DirFile != nil {
		// Go's child changes directory before it rearranges descriptors,
		// so the daemon's descriptor number is valid there.
		dir = procFD(s.DirFile.F.Fd())
	}
	// sudo-rs gets it too, though sudoArgv passes it in argv: sudo 1.9.16p2
	// crashes without an environment, and another sudo might as well.
	env := make([]string, 0, len(s.Env)) // non-nil: nil would inherit ours
	env = append(env, s.Env...)
	attr := &os.ProcAttr{Dir: dir, Env: env, Files: files, Sys: sys}
	var proc *os.Process
	var err error
	if p.cg != nil && p.cg.v1 != nil {
		// The cgroup's pids.max is in its v1 twin, which a child joins
		// from the thread that forks it.
		err = p.cg.v1.forkIn(p.cg.v1Dir, func() error {
			var err error
			proc, err = os.StartProcess(prog, argv, attr)
			return err
		})
	} else {
		proc, err = os.StartProcess(prog, argv, attr)
	}
	if err != nil {
		if proc != nil {
			// Started, but the thread that forked it could not be
			// moved back: it is killed with the cgroup.
			p.procs = append(p.procs, proc)
		}
		return err
	}
	p.procs = append(p.procs, proc)
	if p.sessionPerStage || i == 0 {
		p.pgids = append(p.pgids, proc.Pid)
	}
	return nil
}

// sudoArgv is the argument vector of sudo of kind running program with
// the arguments args[1:] for s. sudo gets the environment as its own and
// --preserve-env=LIST names every variable; sudo-rs, which ignores that
// option, gets each variable as a NAME=value word before "--" (names are
// [proto.ValidEnvName], so neither reads one as an option or the command).
func sudoArgv(s *Spec, kind SudoKind, program string, args []string) []string {
	user := s.Target.Name
	if user == "" {
		user = "#" + strconv.FormatUint(uint64(s.Target.UID), 10)
	}
	argv := []string{s.SudoPath, "-n", "-u", user}
	switch {
	case len(s.Env) == 0:
	case kind == SudoRS:
		argv = append(argv, s.Env...)
	default:
		names := make([]string, len(s.Env))
		for i, kv := range s.Env {
			names[i], _, _ = strings.Cut(kv, "=")
		}
		argv = append(argv, "--preserve-env="+strings.Join(names, ","))
	}
	argv = append(argv, "--", program)
	return append(argv, args[1:]...)
}

// sudoProgram is the path sudo is told to run for c: the link the agent named
// when only root could have changed where it leads and it still leads to
// c.Path, so that a multi-call binary sees its name; c.Path otherwise.
func sudoProgram(c Command) string {
	if c.Link == "" || c.Link == c.Path {
		return c.Path
	}
	real, trusted, err := walkTrusted(c.Link)
	if err != nil || !trusted || real != c.Path {
		return c.Path
	}
	return c.Link
}

// sameFile checks that path leads to the file f was opened from.
func sameFile(path string, f *File) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fmt.Errorf("the program %s: %w", path, err)
	}
	if st.Dev != f.Dev || st.Ino != f.Ino {
		return fmt.Errorf("the program %s is no longer the approved file; not running it", path)
	}
	return nil
}

// watchExits returns a channel that is closed once every stage has exited.
// The stages are left unreaped (waitid with WNOWAIT) so that their pids and
// process group ids stay reserved until the final signals have been sent.
func (p *pipeline) watchExits() <-chan struct{} {
	var wg sync.WaitGroup
	for _, proc := range p.procs {
		wg.Go(func() { spawn.WaitExitNoReap(proc.Pid) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done
}

// exitCode maps a wait status to the protocol's exit code: the exit status, or
// 128+N for death by signal N.
func exitCode(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
