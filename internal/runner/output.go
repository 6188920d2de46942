package runner

import "sync"

// Output is one stream's captured bytes, and owns the memory that holds
// them: a memory mapping outside the Go heap for a pipeline's output
// (see capture), or an ordinary slice for one made by NewOutput. The bytes
// are reached only through Use, which lends them to a function, and Copy.
// Release frees the memory once no Use is running; a Use after it sees no
// bytes. So a use after release reads nothing instead of touching memory
// that is gone, which would crash the daemon. The function given to Use
// must not keep the slice past its return.
//
// The methods are safe for concurrent use, and a nil *Output is an empty
// one.
type Output struct {
	mu       sync.Mutex
	b        []byte
	users    int    // Uses running
	released bool   // Release was called
	free     func() // frees b's memory; nil for heap bytes
}

// NewOutput returns an Output holding b, which it does not copy.
func NewOutput(b []byte) *Output { return &Output{b: b} }

// newMappedOutput returns an Output holding b, whose memory free frees.
func newMappedOutput(b []byte, free func()) *Output { return &Output{b: b, free: free} }

// Len returns the number of bytes held; 0 after Release.
func (o *Output) Len() int {
	if o == nil {
		return 0
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.released {
		return 0
	}
	return len(o.b)
}

// Use calls f with the bytes, which stay valid until f returns; with nil
// after Release.
func (o *Output) Use(f func(b []byte)) {
	b, ok := o.acquire()
	if ok {
		defer o.done()
	}
	f(b)
}

// Copy returns a copy of the bytes on the Go heap (nil after Release).
func (o *Output) Copy() []byte {
	var c []byte
	o.Use(func(b []byte) { c = append([]byte(nil), b...) })
	return c
}

// Release frees the memory of the bytes, at once or when the last running
// Use returns. Calling it more than once is harmless.
func (o *Output) Release() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.released = true
	o.freeLocked()
}

// acquire returns the bytes and, with ok, counts a user, whose use done
// ends.
func (o *Output) acquire() (b []byte, ok bool) {
	if o == nil {
		return nil, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.released {
		return nil, false
	}
	o.users++
	return o.b, true
}

func (o *Output) done() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.users--
	o.freeLocked()
}

// freeLocked frees the memory once it is released and unused.
func (o *Output) freeLocked() {
	if !o.released || o.users > 0 || o.b == nil {
		return
	}
	o.b = nil
	if o.free != nil {
		o.free()
		o.free = nil
	}
}
