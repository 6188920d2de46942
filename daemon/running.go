package daemon

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/agent-sudo/agent-sudo/approval"
)

// run is a running command as the broker holds it.
type run struct {
	approval.Running
	stop   func(by string)
	output func() (*approval.Output, bool)
}

// Started lists a command the daemon has started, and returns the id it is
// listed under and the func that removes it from the list once it has
// ended. r's ID is assigned here and its pipeline bounded as a grant's is
// (MaxGrantPipeline). stop is called at most once, by the first Stop, with
// the console that stopped it; it must return at once (the daemon cancels
// the command's context). output returns the end of the command's output
// so far, or false once the command has ended; it is called without the
// broker's lock held.
func (b *broker) Started(r approval.Running, stop func(by string), output func() (*approval.Output, bool)) (id string, ended func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextRun++
	r.ID = "run" + strconv.Itoa(b.nextRun)
	r.StoppedBy = ""
	g := listing(approval.Grant{Pipeline: r.Pipeline})
	r.Pipeline, r.Elided = g.Pipeline, g.Elided
	e := &run{Running: r, stop: stop, output: output}
	b.runs = append(b.runs, e)
	b.broadcastRunning()
	return r.ID, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if i := slices.Index(b.runs, e); i >= 0 {
			b.runs = slices.Delete(b.runs, i, i+1)
			b.broadcastRunning()
		}
	}
}

// Running returns the commands running now, as a listing: at most
// MaxRunningListed of them, oldest first, how many were left out, and the
// listing's version (a later listing has a higher one).
func (b *broker) Running() (running []approval.Running, omitted int, version uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	running, omitted = b.listRunning()
	return running, omitted, b.runVersion
}

// listRunning is Running's listing with b.mu held.
func (b *broker) listRunning() ([]approval.Running, int) {
	n := min(len(b.runs), approval.MaxRunningListed)
	out := make([]approval.Running, n)
	for i, r := range b.runs[:n] {
		out[i] = r.Running
	}
	return out, len(b.runs) - n
}

// broadcastRunning tells the subscribers the running commands changed;
// the caller holds b.mu.
func (b *broker) broadcastRunning() {
	b.runVersion++
	rs, omitted := b.listRunning()
	b.broadcastEvent(event{Message: approval.Message{Type: approval.MsgRunning, Running: rs, RunningOmitted: omitted}, version: b.runVersion})
}

// Stop stops the running command id on behalf of the console by: the
// command's stop func is called (the daemon then sends SIGTERM and, after
// kill_grace, SIGKILL) and the listing shows who stopped it until it is
// gone. It fails with ErrNoRun when no command id is running, and with
// ErrStopping when a console already stopped it.
func (b *broker) Stop(id, by string) error {
	b.mu.Lock()
	i := slices.IndexFunc(b.runs, func(r *run) bool { return r.ID == id })
	if i < 0 {
		b.mu.Unlock()
		return fmt.Errorf("%w (%q)", approval.ErrNoRun, id)
	}
	r := b.runs[i]
	if r.StoppedBy != "" {
		b.mu.Unlock()
		return fmt.Errorf("%s: %w by %s", id, approval.ErrStopping, r.StoppedBy)
	}
	r.StoppedBy = by
	b.broadcastRunning()
	b.mu.Unlock()
	r.stop(by)
	return nil
}

// Output returns the end of the output of the running command id so far,
// or ErrNoRun when it is not running.
func (b *broker) Output(id string) (*approval.Output, error) {
	b.mu.Lock()
	i := slices.IndexFunc(b.runs, func(r *run) bool { return r.ID == id })
	var r *run
	if i >= 0 {
		r = b.runs[i]
	}
	b.mu.Unlock()
	if r == nil {
		return nil, fmt.Errorf("%w (%q)", approval.ErrNoRun, id)
	}
	out, ok := r.output()
	if !ok {
		return nil, fmt.Errorf("%w (%q)", approval.ErrNoRun, id)
	}
	return out, nil
}

// Finished tells the web approvers (the subscribers whose connection sent
// signed_only) how request id, which an approver allowed, ended: the
// status of the agent's answer and each stage's exit code (none when it
// did not start), for the receipt of the decision. A console, which never
// asked for it, is not sent it.
func (b *broker) Finished(id, status string, codes []int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := event{Message: approval.Message{Type: approval.MsgFinished, ID: id, Status: status, ExitCodes: codes}}
	for s := range b.subs {
		if !s.web {
			continue
		}
		if !s.push(ev) {
			delete(b.subs, s)
			s.close()
			b.approversChanged()
		}
	}
}
