package runner

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/sysfile"
)

// drainTimeout is how long output is still read once every stage has exited
// and the group has been killed. Only a process that left the process group
// can keep a pipe open that long.
const drainTimeout = time.Second

// readChunk is the size of one read from an output pipe: the default pipe
// capacity, so that one read usually empties the pipe.
const readChunk = 64 << 10

// plumb creates the pipes, starts a reader on each output pipe, and returns
// the stdin, stdout and stderr of every stage.
func (p *pipeline) plumb() ([][3]*os.File, error) {
	n := len(p.spec.Stages)
	files := make([][3]*os.File, n)
	if len(p.spec.Stdin) > 0 {
		r, w, err := p.pipe()
		if err != nil {
			return nil, err
		}
		files[0][0] = r
		p.feed(w, p.spec.Stdin)
	} else {
		devNull, err := sysfile.OpenFile(os.DevNull, unix.O_RDONLY)
		if err != nil {
			return nil, fmt.Errorf("runner: opening %s: %w", os.DevNull, err)
		}
		p.toClose = append(p.toClose, devNull)
		files[0][0] = devNull
	}
	for i := range n - 1 {
		r, w, err := p.pipe()
		if err != nil {
			return nil, err
		}
		files[i][1], files[i+1][0] = w, r
	}
	r, w, err := p.outputPipe()
	if err != nil {
		return nil, err
	}
	files[n-1][1] = w
	if err := p.stdout.init(p.spec.MaxOutput); err != nil {
		return nil, err
	}
	p.read(r, &p.stdout)

	p.stderrs = make([]capture, n)
	for i := range n {
		r, w, err := p.outputPipe()
		if err != nil {
			return nil, err
		}
		files[i][2] = w
		if err := p.stderrs[i].init(p.spec.MaxOutput); err != nil {
			return nil, err
		}
		p.read(r, &p.stderrs[i])
	}
	return files, nil
}

// pipe returns a new pipe whose ends closeAll will close.
func (p *pipeline) pipe() (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("runner: creating pipe: %w", err)
	}
	p.toClose = append(p.toClose, r, w)
	return r, w, nil
}

// outputPipe is pipe for an output stream, with Spec.outputPipeSize.
func (p *pipeline) outputPipe() (r, w *os.File, err error) {
	r, w, err = p.pipe()
	if err != nil || p.spec.outputPipeSize == 0 {
		return r, w, err
	}
	raw, err := r.SyscallConn()
	if err != nil {
		return nil, nil, fmt.Errorf("runner: pipe size: %w", err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		_, serr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, p.spec.outputPipeSize)
	}); err != nil || serr != nil {
		return nil, nil, fmt.Errorf("runner: pipe size: %w", errors.Join(err, serr))
	}
	return r, w, nil
}

// feed starts a goroutine that writes data to w and then closes w, so the
// first stage sees the end of its input. The write never holds up the
// pipeline: a stage that exits without reading everything makes it fail with
// EPIPE (the runtime does not raise SIGPIPE for this descriptor), and
// closeAll, at the end of the run, closes w under a write that a process
// which left the group still blocks. Either way the rest is dropped; what
// the stage read is its business, as with any pipe.
func (p *pipeline) feed(w *os.File, data []byte) {
	p.writer.Go(func() {
		_, _ = w.Write(data)
		_ = w.Close() // closeAll may close it too; a second Close is harmless
	})
}

// read starts a goroutine that fills c from r until EOF, an error, or the
// read deadline that finishReading sets.
func (p *pipeline) read(r *os.File, c *capture) {
	p.readEnds = append(p.readEnds, r)
	p.readers.Go(func() { c.readFrom(r) })
}

// finishReading lets the readers drain what the exited stages left in the
// pipes, gives up on writers that escaped the process group after
// drainTimeout, and waits for the readers to stop.
func (p *pipeline) finishReading() {
	deadline := time.Now().Add(drainTimeout)
	for _, f := range p.readEnds {
		_ = f.SetReadDeadline(deadline)
	}
	p.readers.Wait()
}

// closeFile closes f now and forgets it.
func (p *pipeline) closeFile(f *os.File) {
	if i := slices.Index(p.toClose, f); i >= 0 {
		p.toClose[i] = nil
		_ = f.Close()
	}
}

func (p *pipeline) closeAll() {
	for i, f := range p.toClose {
		if f != nil {
			_ = f.Close()
			p.toClose[i] = nil
		}
	}
}

// dupAbove returns a close-on-exec duplicate of f numbered above every
// descriptor that Go's child may overwrite before it execs when it is given
// files (docs/execution.md, "What is approved is what runs"). The caller closes the duplicate
// once the child has started.
func dupAbove(f *os.File, files []*os.File) (*os.File, error) {
	top := len(files)
	for _, g := range files {
		if g != nil && int(g.Fd()) > top {
			top = int(g.Fd())
		}
	}
	// Go's child uses at most one number for its error pipe and one per
	// entry of files, starting at top+1.
	low := top + len(files) + 3
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, low)
	if err == unix.EINVAL || err == unix.EMFILE {
		// EINVAL: low is at or past RLIMIT_NOFILE; EMFILE: no number
		// from low up to it is free. Either way the daemon is out of
		// descriptors, which is what the agent is told.
		return nil, fmt.Errorf("the daemon is out of file descriptors: none free from %d up, under RLIMIT_NOFILE, for the program's: %w", low, err)
	}
	if err != nil {
		return nil, fmt.Errorf("duplicating the program's descriptor: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
