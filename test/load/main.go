// Command load drives agent-sudod with many concurrent clients, as
// internal/loadgen describes, and prints a table of what each run measured
// (and a CSV with -csv), for docs/performance.md: `make load`. It is a
// development tool; it is not installed or packaged.
//
// By default each run gets a fresh daemon of its own (so that its peak
// memory is that run's), built from this tree, on a socket in a temporary
// directory, with exec = "direct" and rules that allow the load's
// pipelines; the built-in value of every other key applies, max_connections
// included. It must run as root, like the daemon. With -socket it drives a
// daemon that is already running instead.
//
// Each combination of -clients, -output and -stages is one run of
// -requests requests. The command fails (exit status 1) if any request of
// any run was not answered correctly, or if the daemon's open descriptors
// do not come back to their number before the run.
package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/loadgen"
	"github.com/agent-sudo/agent-sudo/internal/runner"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "load: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	clients, outputs, stages []int
	requests                 int
	socket, daemon, exec     string
	pid                      int
	csv                      string
	settle                   time.Duration
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var o options
	clients := fs.String("clients", "1,8,64,200", "concurrent clients, a comma-separated `LIST` (one run each)")
	outputs := fs.String("output", "0", "bytes of stdout per request, a comma-separated `LIST` of sizes (0, 1KiB, 16MiB, ...)")
	stages := fs.String("stages", "1", "pipeline lengths, a comma-separated `LIST`")
	fs.IntVar(&o.requests, "requests", 10000, "requests per run, `N`")
	fs.StringVar(&o.socket, "socket", "", "drive the daemon already listening at `PATH` instead of starting one per run")
	fs.IntVar(&o.pid, "pid", 0, "with -socket: the daemon's `PID` (default: the socket's peer; give it under socket activation)")
	fs.StringVar(&o.daemon, "daemon", "", "the agent-sudod `BINARY` to start (default: built from this tree)")
	fs.StringVar(&o.exec, "exec", "direct", "the daemon's exec `MODE`, direct or sudo")
	fs.StringVar(&o.csv, "csv", "", "also write the results to `FILE` as CSV")
	appendCSV := fs.Bool("append", false, "with -csv: add the rows to the file (its header only if it is empty)")
	fs.DurationVar(&o.settle, "settle", 10*time.Second, "how long the daemon's descriptors may take to come back to their number before the run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.clients, err = ints("clients", *clients, strconv.Atoi); err != nil {
		return err
	}
	if o.outputs, err = ints("output", *outputs, size); err != nil {
		return err
	}
	if o.stages, err = ints("stages", *stages, strconv.Atoi); err != nil {
		return err
	}
	if m := runner.Mode(o.exec); m != runner.ModeDirect && m != runner.ModeSudo {
		return fmt.Errorf("-exec %q: want %q or %q", o.exec, runner.ModeDirect, runner.ModeSudo)
	}

	var w *csv.Writer
	if o.csv != "" {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if *appendCSV {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(o.csv, flags, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		w = csv.NewWriter(f)
		if st.Size() == 0 {
			if err := w.Write(csvHeader); err != nil {
				return err
			}
		}
	}
	if o.socket == "" {
		if os.Geteuid() != 0 {
			return errors.New("the daemon it starts runs as root: run this as root, or give -socket")
		}
		if o.daemon == "" {
			dir, err := os.MkdirTemp("", "agent-sudo-load-bin")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			build := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "github.com/agent-sudo/agent-sudo/cmd/agent-sudod")
			build.Stdout, build.Stderr = os.Stderr, os.Stderr
			if err := build.Run(); err != nil {
				return fmt.Errorf("build agent-sudod: %w", err)
			}
			o.daemon = filepath.Join(dir, "agent-sudod")
		}
	}

	fmt.Fprintf(stdout, "%s\n\n", machine())
	fmt.Fprintln(stdout, "| clients | requests | stages | output | ok | failed | busy retries (max per request) | req/s | p50 | p90 | p99 | max | daemon peak RSS | daemon fds before / peak / after | daemon threads peak |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var bad []string
	for _, out := range o.outputs {
		for _, st := range o.stages {
			for _, cl := range o.clients {
				lo := loadgen.Options{Clients: cl, Requests: o.requests, Stages: st, Output: out, Socket: o.socket, DaemonPID: o.pid}
				res, err := o.once(ctx, lo)
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, row(res))
				for _, f := range res.Failures {
					fmt.Fprintf(stdout, "  failure: %s\n", f)
				}
				if w != nil {
					if err := w.Write(csvRow(o.exec, res)); err != nil {
						return err
					}
					w.Flush()
				}
				if res.Failed > 0 || res.OK != res.Requests {
					bad = append(bad, fmt.Sprintf("%d clients, %d stages, %d bytes: %d of %d answered correctly", cl, st, out, res.OK, res.Requests))
				}
				if res.After.FDs > res.Before.FDs {
					bad = append(bad, fmt.Sprintf("%d clients, %d stages, %d bytes: the daemon had %d descriptors open before the run and %d after",
						cl, st, out, res.Before.FDs, res.After.FDs))
				}
			}
		}
	}
	if w != nil {
		if w.Flush(); w.Error() != nil {
			return w.Error()
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// once makes one run: on the daemon at o.socket, or on a fresh one started
// for it and stopped after it. After the run it waits up to o.settle for
// the daemon's descriptors to come back to their number before the run, and
// records that reading as the run's After.
func (o *options) once(ctx context.Context, lo loadgen.Options) (*loadgen.Result, error) {
	if lo.Socket == "" {
		d, err := startDaemon(ctx, o.daemon, o.exec)
		if err != nil {
			return nil, err
		}
		defer d.stop()
		lo.Socket, lo.DaemonPID = d.socket, d.cmd.Process.Pid
	}
	res, err := loadgen.Run(ctx, lo)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, o.settle)
	defer cancel()
	after, err := loadgen.Settle(sctx, res.DaemonPID, res.Before.FDs, 10*time.Millisecond)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	res.After = after
	return res, nil
}

// daemon is an agent-sudod started for one run.
type daemon struct {
	dir, socket string
	cmd         *exec.Cmd
	done        chan error
}

// loadRules allow exactly the pipelines loadgen.Options.Pipeline sends.
const loadRules = `
[[rule]]
name = "load: true"
action = "allow"
match = ["true"]

[[rule]]
name = "load: output"
action = "allow"
match = ["head", "-c", "*", "/dev/zero"]

[[rule]]
name = "load: pipe"
action = "allow"
match = ["cat"]
`

// startDaemon starts bin with a configuration in a fresh temporary
// directory and waits until it answers a ping.
func startDaemon(ctx context.Context, bin, mode string) (*daemon, error) {
	// A socket path has at most 107 bytes: a short directory.
	dir, err := os.MkdirTemp("", "asl")
	if err != nil {
		return nil, err
	}
	d := &daemon{dir: dir, socket: filepath.Join(dir, "run", "agent-sudo.sock"), done: make(chan error, 1)}
	cfg := fmt.Sprintf(`socket = %q
socket_group = "root"
approver_socket = %q
audit_log = %q
exec = %q
cgroup = "best-effort"
%s`, d.socket, filepath.Join(dir, "run", "approver.sock"), filepath.Join(dir, "audit.jsonl"), mode, loadRules)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	logs, err := os.Create(filepath.Join(dir, "agent-sudod.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logs.Close() // the daemon has its own copy
	d.cmd = exec.Command(bin, "--config", cfgPath)
	d.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "LISTEN_FDS=", "LISTEN_PID=", "JOURNAL_STREAM=")
	d.cmd.Stdout, d.cmd.Stderr = logs, logs
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	c := &client.Client{Socket: d.socket, Busy: client.BusyRetry{Retries: -1}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Ping(pctx)
		cancel()
		if err == nil {
			return d, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("agent-sudod did not answer a ping: %w; its log is %s", err, logs.Name())
		}
		select {
		case err := <-d.done:
			d.done <- err
			log, _ := os.ReadFile(logs.Name())
			d.stop()
			return nil, fmt.Errorf("agent-sudod exited during start-up: %v\n%s", err, log)
		case <-time.After(20 * time.Millisecond): // polling: nothing signals readiness here
		}
	}
}

// stop ends the daemon with SIGTERM, kills it if it is still there after
// 30 s, and removes its directory.
func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	os.RemoveAll(d.dir)
}

// ints parses a comma-separated list of flag name with parse.
func ints(name, list string, parse func(string) (int, error)) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := parse(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("-%s %q: %q is not a count", name, list, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// size parses a byte count with an optional KiB or MiB suffix.
func size(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "KiB"):
		s, mult = strings.TrimSuffix(s, "KiB"), 1<<10
	case strings.HasSuffix(s, "MiB"):
		s, mult = strings.TrimSuffix(s, "MiB"), 1<<20
	}
	n, err := strconv.Atoi(s)
	return n * mult, err
}

// machine describes where the runs were made.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	load, _ := os.ReadFile("/proc/loadavg")
	return fmt.Sprintf("Machine: %d CPUs (nproc), %s, Linux %s, %s; load average at start %s; %s UTC",
		runtime.NumCPU(), model, strings.TrimSpace(string(kernel)), runtime.Version(),
		strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "), time.Now().UTC().Format("2006-01-02 15:04"))
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) }

func mb(b int64) string { return strconv.FormatFloat(float64(b)/1e6, 'f', 1, 64) }

func bytesText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// row is a run as a row of the Markdown table run prints.
func row(r *loadgen.Result) string {
	return fmt.Sprintf("| %d | %d | %d | %s | %d | %d | %d (%d) | %.0f | %s ms | %s ms | %s ms | %s ms | %s MB | %d / %d / %d | %d |",
		r.Clients, r.Requests, r.Stages, bytesText(r.Output), r.OK, r.Failed, r.Retries, r.MaxRetries, r.Throughput(),
		ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max), mb(r.Peak.RSS), r.Before.FDs, r.Peak.FDs, r.After.FDs, r.Peak.Threads)
}

// csvHeader names the columns of csvRow; test/load/plot reads clients and
// throughput_per_s.
var csvHeader = []string{"exec", "clients", "requests", "stages", "output_bytes", "ok", "failed", "busy_failed", "busy_retries",
	"max_retries", "elapsed_s", "throughput_per_s", "p50_ms", "p90_ms", "p99_ms", "max_ms", "rss_peak_bytes", "rss_hwm_bytes",
	"fds_before", "fds_peak", "fds_after", "threads_peak"}

func csvRow(mode string, r *loadgen.Result) []string {
	i := strconv.Itoa
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	return []string{mode, i(r.Clients), i(r.Requests), i(r.Stages), i(r.Output), i(r.OK), i(r.Failed), i(r.Busy), i(r.Retries),
		i(r.MaxRetries), f(r.Elapsed.Seconds()), f(r.Throughput()), ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max),
		strconv.FormatInt(r.Peak.RSS, 10), strconv.FormatInt(r.Peak.HWM, 10), i(r.Before.FDs), i(r.Peak.FDs), i(r.After.FDs),
		i(r.Peak.Threads)}
}
