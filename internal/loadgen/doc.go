// Package loadgen drives a running agent-sudod with many concurrent
// clients over its real socket and measures what they see (throughput,
// latency percentiles, errors, retries after busy answers) and what the
// daemon costs meanwhile (peak resident memory, open file descriptors and
// threads, read from /proc). test/load is its command (`make load`); the
// load tests in internal/loadgen and daemon use it to check that
// every request of a run is answered and that nothing grows.
//
// # What a run is
//
// Clients goroutines share one [client.Client], with its default retry of
// busy answers (counted through BusyRetry.OnRetry), and take request
// numbers from one counter until Requests have been sent, so the run ends
// when the last answer arrives, whatever the spread between clients. A
// latency is one Run call as an agent sees it: connect to checked answer,
// retries included. An answer is correct when it is ok, has one stage per
// stage sent, every stage exited 0, and stdout has the expected length;
// anything else, a busy answer after the retries included, is a failure,
// and the first few are kept with their reason.
//
// # Sampling the daemon
//
// The daemon is read at /proc/PID while the run goes, every SampleEvery:
// VmRSS and Threads from status, and the entries of fd. The peaks are the
// largest samples, so a peak shorter than the interval can be missed; VmHWM
// (the kernel's own peak, since the daemon started) is reported as well.
// The daemon's pid is found from the socket's peer credentials when not
// given; under socket activation those name the process that created the
// socket (systemd), so give the pid then.
package loadgen
