package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/proto"
	"github.com/google/uuid"
)

// Options describe one run.
type Options struct {
	// Socket is the daemon's client socket.
	Socket string
	// DaemonPID is the daemon's process; 0 means the peer of a connection
	// to Socket (see the package documentation).
	DaemonPID int
	// Clients is how many clients send at once, at least 1.
	Clients int
	// Requests is how many requests the run sends in all, at least 1.
	Requests int
	// Stages is the pipeline's length, at least 1 (see Pipeline).
	Stages int
	// Output is how many bytes of stdout each request produces (see
	// Pipeline).
	Output int
	// Busy is the clients' retry of busy answers, OnRetry excepted (the
	// run counts retries); the zero value is the client's default.
	Busy client.BusyRetry
	// SampleEvery is how often the daemon is read from /proc; 0 means
	// 10 ms.
	SampleEvery time.Duration
}

// Pipeline is the pipeline a run with o sends: with no output, Stages
// times `true`; with output, `head -c Output /dev/zero` followed by
// Stages-1 times `cat`, so every byte passes through every stage.
func (o Options) Pipeline() [][]string {
	first := []string{"true"}
	next := []string{"true"}
	if o.Output > 0 {
		first = []string{"head", "-c", strconv.Itoa(o.Output), "/dev/zero"}
		next = []string{"cat"}
	}
	p := [][]string{first}
	for range o.Stages - 1 {
		p = append(p, next)
	}
	return p
}

// Result is what a run measured.
type Result struct {
	Options
	// OK counts correct answers (see the package documentation); Failed
	// counts the others, Busy those of them that were still busy after the
	// client's retries. OK+Failed is Requests unless ctx ended the run.
	OK, Failed, Busy int
	// Failures are the first few failures, each with its reason.
	Failures []string
	// Retries counts busy answers that were retried; MaxRetries is the
	// most retries one request needed.
	Retries, MaxRetries int
	// Elapsed is the run's wall-clock time, from the first request sent to
	// the last answer.
	Elapsed time.Duration
	// P50, P90, P99 and Max are latencies of one request as the client
	// sees it, retries included (nearest rank).
	P50, P90, P99, Max time.Duration
	// Before and After are the daemon read just before the first request
	// and just after the last answer; Peak holds the largest of each
	// figure sampled in between (HWM: the daemon's own peak, read last).
	Before, After, Peak Proc
}

// Throughput is the number of correct answers per second.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// maxFailures is how many failures a Result keeps with their reason.
const maxFailures = 5

// Run sends o.Requests requests from o.Clients clients to the daemon at
// o.Socket and returns what it measured. The error is for a run that could
// not be made (bad options, no daemon to read); failed requests are
// counted in the Result. Cancelling ctx ends the run early: the requests
// not sent are counted nowhere.
func Run(ctx context.Context, o Options) (*Result, error) {
	switch {
	case o.Clients < 1:
		return nil, fmt.Errorf("clients is %d; at least 1 is needed", o.Clients)
	case o.Requests < 1:
		return nil, fmt.Errorf("requests is %d; at least 1 is needed", o.Requests)
	case o.Stages < 1:
		return nil, fmt.Errorf("stages is %d; a pipeline has at least 1", o.Stages)
	case o.Output < 0 || o.Output > proto.MaxOutputBytes:
		return nil, fmt.Errorf("output is %d bytes; it must be between 0 and %d, the daemon's limit", o.Output, proto.MaxOutputBytes)
	}
	if o.SampleEvery <= 0 {
		o.SampleEvery = 10 * time.Millisecond
	}
	if o.DaemonPID == 0 {
		pid, err := DaemonPID(ctx, o.Socket)
		if err != nil {
			return nil, err
		}
		o.DaemonPID = pid
	}
	res := &Result{Options: o}
	var err error
	if res.Before, err = ReadProc(o.DaemonPID); err != nil {
		return nil, err
	}

	var (
		retries    atomic.Int64
		maxRetries atomic.Int64
		mu         sync.Mutex // guards res's counts and Failures
	)
	busy := o.Busy
	busy.OnRetry = func(_ *proto.Response, retry int, _ time.Duration) {
		retries.Add(1)
		for m := maxRetries.Load(); int64(retry) > m && !maxRetries.CompareAndSwap(m, int64(retry)); m = maxRetries.Load() {
		}
	}
	c := &client.Client{Socket: o.Socket, Busy: busy}
	fail := func(n int, busy bool, why string) {
		mu.Lock()
		defer mu.Unlock()
		res.Failed++
		if busy {
			res.Busy++
		}
		if len(res.Failures) < maxFailures {
			res.Failures = append(res.Failures, fmt.Sprintf("request %d: %s", n, why))
		}
	}

	stopSampling := make(chan struct{})
	sampled := make(chan Proc, 1)
	go func() { sampled <- sample(o.DaemonPID, o.SampleEvery, res.Before, stopSampling) }()

	pipeline := o.Pipeline()
	latencies := make([]time.Duration, o.Requests) // one slot per request: no lock
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range o.Clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				n := int(next.Add(1) - 1)
				if n >= o.Requests {
					return
				}
				t0 := time.Now()
				resp, err := c.Run(ctx, &proto.Request{Session: "load", Reason: "load test", Pipeline: pipeline, Privileged: true})
				latencies[n] = time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					fail(n, false, err.Error())
					continue
				}
				if why := wrong(resp, o); why != "" {
					fail(n, client.IsBusy(resp), why)
					continue
				}
				mu.Lock()
				res.OK++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	close(stopSampling)
	res.Peak = <-sampled
	if res.After, err = ReadProc(o.DaemonPID); err != nil {
		return nil, fmt.Errorf("after the run: %w", err)
	}
	res.Peak = maxProc(res.Peak, res.After)
	res.Retries, res.MaxRetries = int(retries.Load()), int(maxRetries.Load())

	done := latencies[:min(int(next.Load()), o.Requests)]
	slices.Sort(done)
	res.P50, res.P90, res.P99 = rank(done, 50), rank(done, 90), rank(done, 99)
	if len(done) > 0 {
		res.Max = done[len(done)-1]
	}
	return res, nil
}

// wrong says what is wrong with resp as the answer to a request of a run
// with o, or "" when it is correct.
func wrong(resp *proto.Response, o Options) string {
	switch {
	case resp.Status != proto.StatusOK:
		return fmt.Sprintf("%s: %q", resp.Status, resp.Message)
	case len(resp.Stages) != o.Stages:
		return fmt.Sprintf("%d stages in the answer, want %d", len(resp.Stages), o.Stages)
	case len(resp.Stdout) != o.Output:
		return fmt.Sprintf("%d bytes of stdout, want %d", len(resp.Stdout), o.Output)
	}
	for i, st := range resp.Stages {
		if st.ExitCode != 0 {
			return fmt.Sprintf("stage %d exited %d: %q", i, st.ExitCode, st.Stderr)
		}
	}
	return ""
}

// rank is the p-th percentile of sorted by nearest rank; 0 when empty.
func rank(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100 // ceil(p/100 * n), 1-based
	return sorted[max(i, 1)-1]
}

// sample reads pid every interval until stop is closed and returns the
// largest of each figure, starting from first. A failed reading is
// skipped: the daemon is read once more after the run, and that reading's
// error is reported.
func sample(pid int, every time.Duration, first Proc, stop <-chan struct{}) Proc {
	peak := first
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return peak
		case <-t.C:
			if p, err := ReadProc(pid); err == nil {
				peak = maxProc(peak, p)
			}
		}
	}
}

func maxProc(a, b Proc) Proc {
	return Proc{RSS: max(a.RSS, b.RSS), HWM: max(a.HWM, b.HWM), Threads: max(a.Threads, b.Threads), FDs: max(a.FDs, b.FDs)}
}

// DaemonPID returns the pid of the process listening on socket, from the
// peer credentials of a connection to it (see the package documentation
// for socket activation). The connection carries a ping, which the daemon
// answers without recording it.
func DaemonPID(ctx context.Context, socket string) (int, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return 0, fmt.Errorf("find the daemon's pid: %w", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, errors.New("find the daemon's pid: not a Unix socket connection")
	}
	cred, err := peercred.Get(uc)
	if err != nil {
		return 0, fmt.Errorf("find the daemon's pid: %w", err)
	}
	ping, err := (&proto.Request{ID: uuid.NewString(), Time: time.Now(), Action: proto.ActionPing}).MarshalJSON()
	if err != nil {
		return 0, fmt.Errorf("find the daemon's pid: %w", err)
	}
	if _, err := c.Write(append(ping, '\n')); err != nil {
		return 0, fmt.Errorf("find the daemon's pid: ping: %w", err)
	}
	if _, err := proto.ReadResponse(c); err != nil {
		return 0, fmt.Errorf("find the daemon's pid: ping: %w", err)
	}
	return int(cred.PID), nil
}

// Settle waits until the daemon pid has at most fds open descriptors,
// reading /proc every interval, and returns the last reading: after a run,
// the daemon closes each connection just after its answer, and may still
// be writing the last audit records. It returns ctx's error, with the last
// reading, if that does not happen before ctx ends.
func Settle(ctx context.Context, pid, fds int, every time.Duration) (Proc, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		p, err := ReadProc(pid)
		if err != nil || p.FDs <= fds {
			return p, err
		}
		select {
		case <-ctx.Done():
			return p, fmt.Errorf("the daemon still has %d descriptors open, %d before the run: %w", p.FDs, fds, ctx.Err())
		case <-t.C:
		}
	}
}
