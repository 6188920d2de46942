package daemon_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

var tableRounds = flag.Int("table.rounds", 200, "BenchmarkTable: round trips measured per figure (each interleaved with its baseline)")

// BenchmarkTable prints the figures of issue 14's table, each next to its
// baseline measured in the same run, interleaved with it (one of each in
// turn) so that the machine's load weighs on both alike. It is what
// `make bench` runs first; docs/performance.md has a run. It is a
// benchmark so that `go test` without -bench, and so make test, never runs
// it; it makes no assertion about times.
//
//	go test -run '^$' -bench '^BenchmarkTable$' -benchtime 1x ./daemon/
func BenchmarkTable(b *testing.B) {
	daemontest.RequireRoot(b)
	if b.N != 1 {
		b.Skip("run with -benchtime 1x: the table measures its own rounds (-table.rounds)")
	}
	rounds := *tableRounds
	out := os.Stdout
	fmt.Fprintf(out, "\nissue 14 figures: %s, %d rounds each, medians; %s\n", machine(), rounds, time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "| figure | measured | baseline in the same run | ratio | target |\n|---|---|---|---|---|\n")
	ctx := context.Background()
	runTrue := func(c *client.Client) func() {
		return func() {
			resp, err := c.Run(ctx, &proto.Request{Pipeline: [][]string{{"true"}}, Privileged: true})
			if err != nil || resp.Status != proto.StatusOK {
				b.Fatalf("%v %+v", err, resp)
			}
		}
	}
	bare := func(argv ...string) func() {
		return func() {
			if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
				b.Fatalf("%v: %v", argv, err)
			}
		}
	}

	direct := daemontest.Start(b, daemontest.Config{Rules: daemontest.AllowAll, ReadTimeout: "60s"})
	dc := client.New(direct.Socket)
	cpu0 := cpuTime(b, direct.Cmd.Process.Pid)
	m, base := interleave(rounds, runTrue(dc), bare("/bin/true"))
	cpu := (cpuTime(b, direct.Cmd.Process.Pid) - cpu0) / time.Duration(rounds+1)
	row(out, "direct-mode round trip of `true`", ms(m)+" (daemon CPU "+ms(cpu)+")", "a Go program's fork/exec/wait of `/bin/true`: "+ms(base), m.Seconds()/base.Seconds(), "≤ 1.3×")

	if _, err := exec.LookPath("sudo"); err == nil {
		sudo := daemontest.Start(b, daemontest.Config{Exec: "sudo", Rules: daemontest.AllowAll})
		cpu0 := cpuTime(b, sudo.Cmd.Process.Pid)
		m, base := interleave(rounds, runTrue(client.New(sudo.Socket)), bare("sudo", "-n", "true"))
		cpu := (cpuTime(b, sudo.Cmd.Process.Pid) - cpu0) / time.Duration(rounds+1)
		row(out, "sudo-mode round trip of `true`", ms(m)+" (daemon CPU "+ms(cpu)+")", "`sudo -n true` alone: "+ms(base), m.Seconds()/base.Seconds(), "≤ 1.05×")
		sudo.Stop()
	} else {
		fmt.Fprintf(out, "| sudo-mode round trip of `true` | (sudo not installed) | | | ≤ 1.05× |\n")
	}

	const size = proto.MaxOutputBytes
	big := &proto.Request{Pipeline: [][]string{{"head", "-c", strconv.Itoa(size), "/dev/zero"}}, Privileged: true}
	bigRun := func() {
		resp, err := dc.Run(ctx, big)
		if err != nil || resp.Status != proto.StatusOK || len(resp.Stdout) != size {
			b.Fatalf("%v %+v", err, resp)
		}
	}
	bigBare := func() {
		// The same command's 16 MiB read by the Go program itself.
		cmd := exec.Command("head", "-c", strconv.Itoa(size), "/dev/zero")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		got, err := io.ReadAll(stdout)
		if err != nil || len(got) != size || cmd.Wait() != nil {
			b.Fatalf("bare head: %v, %d bytes", err, len(got))
		}
	}
	bigRounds := max(rounds/10, 5)
	cpu0 = cpuTime(b, direct.Cmd.Process.Pid)
	m, base = interleave(bigRounds, bigRun, bigBare)
	cpu = (cpuTime(b, direct.Cmd.Process.Pid) - cpu0) / time.Duration(bigRounds+1)
	row(out, "16 MiB of stdout end to end, decoded", fmt.Sprintf("%s (%.0f MB/s; daemon CPU %s)", ms(m), size/m.Seconds()/1e6, ms(cpu)),
		fmt.Sprintf("a Go program reading `head -c 16777216 /dev/zero` itself: %s (%.0f MB/s)", ms(base), size/base.Seconds()/1e6),
		m.Seconds()/base.Seconds(), "≤ 60 ms on the issue's machine")
	direct.Stop()

	for _, n := range []int{1, 8} {
		idle, peak := rssFor(b, n, big)
		row(out, fmt.Sprintf("daemon peak RSS for %d concurrent 16 MiB answer(s)", n),
			fmt.Sprintf("%.1f MB (%.3f× the output)", float64(peak)/1e6, float64(peak)/float64(n*size)),
			fmt.Sprintf("the same daemon idle, after a ping: %.1f MB", float64(idle)/1e6),
			float64(peak)/float64(n*size), "≤ 1.5× the output")
	}

	load := daemontest.Start(b, daemontest.Config{Rules: daemontest.AllowAll, MaxConnections: 64})
	lat := manyClients(b, client.New(load.Socket), 50, 20)
	fmt.Fprintf(out, "| 1,000 requests from 50 clients | p50 %s, p99 %s, max %s | — | | see make load |\n",
		ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(lat[len(lat)-1]))
	load.Stop()
	fmt.Fprintln(out)
}

// interleave runs measured and baseline rounds times each, alternating,
// and returns the median time of each.
func interleave(rounds int, measured, baseline func()) (time.Duration, time.Duration) {
	// One of each first, unmeasured: page cache, sudo's timestamp, the
	// daemon's first connection.
	measured()
	baseline()
	var m, base []time.Duration
	for range rounds {
		t := time.Now()
		measured()
		m = append(m, time.Since(t))
		t = time.Now()
		baseline()
		base = append(base, time.Since(t))
	}
	return median(m), median(base)
}

// cpuTime returns the CPU time (user and system, without its children's)
// pid has used, from /proc/PID/stat: what the daemon itself spends, which
// the machine's load does not stretch as it stretches wall time.
func cpuTime(b *testing.B, pid int) time.Duration {
	return testenv.MustProcStat(b, pid).CPUTime()
}

// rssFor starts a fresh daemon, reads its peak RSS (VmHWM) after a ping,
// sends n 16 MiB requests at once, and reads its peak RSS again.
func rssFor(b *testing.B, n int, req *proto.Request) (idle, peak int64) {
	d := daemontest.Start(b, daemontest.Config{Rules: daemontest.AllowAll, ReadTimeout: "60s"})
	defer d.Stop()
	idle, err := peakRSS(d.Cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	c := client.New(d.Socket)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := c.Run(context.Background(), req)
			if err != nil || resp.Status != proto.StatusOK {
				b.Errorf("%v %+v", err, resp)
			}
		})
	}
	wg.Wait()
	peak, err = peakRSS(d.Cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	return idle, peak
}

// manyClients sends clients*each allowed `true` from clients goroutines and
// returns every latency, sorted.
func manyClients(b *testing.B, c *client.Client, clients, each int) []time.Duration {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range each {
				t := time.Now()
				resp, err := c.Run(context.Background(), &proto.Request{Pipeline: [][]string{{"true"}}, Privileged: true})
				d := time.Since(t)
				if err != nil || resp.Status != proto.StatusOK {
					b.Errorf("%v %+v", err, resp)
					continue
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no request answered")
	}
	return lat
}

func row(w io.Writer, figure, measured, baseline string, ratio float64, target string) {
	fmt.Fprintf(w, "| %s | %s | %s | %.2f× | %s |\n", figure, measured, baseline, ratio, target)
}

func median(d []time.Duration) time.Duration { return percentile(slices.Sorted(slices.Values(d)), 50) }

// percentile returns the p-th percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

// machine names the machine: CPUs and CPU model.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = ", load average " + strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("nproc %d, %s, %s%s", runtime.NumCPU(), model, runtime.Version(), load)
}
