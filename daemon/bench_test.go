package daemon_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// The benchmarks start the real daemon like the end-to-end tests do. Run
// them with `make bench` (no race detector); docs/performance.md has the
// figures and the command.

func benchRoundTrip(b *testing.B, mode string) {
	d := daemontest.Start(b, daemontest.Config{Exec: mode, Rules: daemontest.AllowAll})
	c := client.New(d.Socket)
	ctx := context.Background()
	b.ResetTimer()
	cpu0 := cpuTime(b, d.Cmd.Process.Pid)
	for b.Loop() {
		resp, err := c.Run(ctx, &proto.Request{Pipeline: [][]string{{"true"}}, Privileged: true, Time: time.Now()})
		if err != nil || resp.Status != proto.StatusOK {
			b.Fatalf("%v %+v", err, resp)
		}
	}
	// The daemon's own CPU per request (not its children's), which the
	// machine's load stretches far less than the wall time.
	b.ReportMetric(float64(cpuTime(b, d.Cmd.Process.Pid)-cpu0)/float64(b.N), "daemon-cpu-ns/op")
}

// BenchmarkRoundTripDirect is one allowed `true` through the daemon in
// direct mode: connect, decode, plan, rules, fork/exec, answer.
func BenchmarkRoundTripDirect(b *testing.B) { benchRoundTrip(b, "direct") }

// BenchmarkRoundTripSudo is the same through the real sudo binary.
func BenchmarkRoundTripSudo(b *testing.B) {
	if _, err := exec.LookPath("sudo"); err != nil {
		b.Skip("sudo not installed")
	}
	benchRoundTrip(b, "sudo")
}

// BenchmarkSudoTrueAlone is `sudo -n true` run directly, the baseline the
// sudo-mode round trip is compared with.
func BenchmarkSudoTrueAlone(b *testing.B) {
	daemontest.RequireRoot(b)
	if _, err := exec.LookPath("sudo"); err != nil {
		b.Skip("sudo not installed")
	}
	for b.Loop() {
		if err := exec.Command("sudo", "-n", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// Benchmark16MiBOutput moves 16 MiB of stdout end to end (command, daemon
// capture, base64 encoding, client decoding) and reports the daemon's peak
// resident memory afterwards.
func Benchmark16MiBOutput(b *testing.B) {
	d := daemontest.Start(b, daemontest.Config{Rules: daemontest.AllowAll})
	c := client.New(d.Socket)
	ctx := context.Background()
	b.SetBytes(proto.MaxOutputBytes)
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Run(ctx, &proto.Request{Pipeline: [][]string{{"head", "-c", strconv.Itoa(proto.MaxOutputBytes), "/dev/zero"}},
			Privileged: true, Time: time.Now()})
		if err != nil || resp.Status != proto.StatusOK || len(resp.Stdout) != proto.MaxOutputBytes {
			b.Fatalf("%v %s %d", err, resp.Status, len(resp.Stdout))
		}
	}
	b.StopTimer()
	if hwm, err := peakRSS(d.Cmd.Process.Pid); err == nil {
		b.ReportMetric(float64(hwm), "daemon-peak-rss-bytes")
	}
}

// peakRSS reads VmHWM, the peak resident set size, of pid in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
