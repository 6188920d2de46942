package runner

import "sync"

// TailBytes is how much of the end of each output stream a [Live] can
// show: the last TailBytes bytes the stream carried, whether or not they
// fit in the captured output.
const TailBytes = 4 << 10

// Live reads the output of a pipeline while it runs, without disturbing
// it: put one in [Spec.Live] and call [Live.Tail] from any goroutine.
// The zero value is ready to use; a Live serves one Run.
type Live struct {
	mu sync.Mutex
	p  *pipeline // set while the stages run; nil before and after
}

// Tail is the end of what a running pipeline has written so far.
type Tail struct {
	// Stdout is the last at most TailBytes bytes of the last stage's
	// stdout; Stderr the same for each stage's stderr.
	Stdout []byte
	Stderr [][]byte
	// StdoutBytes and StderrBytes count every byte each stream has carried
	// so far, including bytes past Spec.MaxOutput that were discarded.
	StdoutBytes int64
	StderrBytes []int64
}

// Tail returns the end of each output stream so far, and false when the
// pipeline has not started yet or Run has returned.
func (l *Live) Tail() (Tail, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil {
		return Tail{}, false
	}
	var t Tail
	t.Stdout, t.StdoutBytes = l.p.stdout.tail()
	t.Stderr = make([][]byte, len(l.p.stderrs))
	t.StderrBytes = make([]int64, len(l.p.stderrs))
	for i := range l.p.stderrs {
		t.Stderr[i], t.StderrBytes[i] = l.p.stderrs[i].tail()
	}
	return t, true
}

// attach makes l show p's output; detach ends that. Both are no-ops on a
// nil Live.
func (l *Live) attach(p *pipeline) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p = p
}

func (l *Live) detach() { l.attach(nil) }
