package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// Genesis is the prev of the first record of a new chain: the SHA-256 of the
// ASCII text "agent-sudo audit log v1".
const Genesis = "005cfbca35c7e789b461e9d2de81a2648b2a6fce9fb2567e6997266ec687c7b9"

// ErrClosed is returned by Append and Reopen after Close.
var ErrClosed = errors.New("audit log is closed")

// Batch limits of the writer: one write and one sync cover at most this
// many records, or this many bytes (a single larger record is written
// alone).
const (
	maxBatchRecords = 512
	maxBatchBytes   = 4 << 20
)

// syncDelay is how long a record written without a sync (see [Log.write])
// waits at most for one: a later synced group covers it sooner.
const syncDelay = 50 * time.Millisecond

// Options configure a Log.
type Options struct {
	// EnvValues records environment values in full (audit_env_values).
	// By default each value is recorded as "sha256:" and its hex SHA-256.
	EnvValues bool
	// Stdin records a request's stdin content (base64 in the JSON) next to
	// its size and SHA-256 (audit_stdin). By default only the size and the
	// hash are recorded.
	Stdin bool
	// Journal receives one entry per decision, result and refused request,
	// carrying the record's hash; nil sends none. See [SystemJournal].
	Journal Journal
	// Logger receives what the log cannot return to a caller: a journal
	// entry that could not be sent, an incomplete last line removed when
	// the file was opened. nil discards it.
	Logger *slog.Logger
	// Now is the clock for record times; nil means time.Now.
	Now func() time.Time
	// DaemonHost is the daemon's host name, written in every record's
	// daemon_host; empty writes none.
	DaemonHost string

	// wrap, when set by tests, wraps each file the writer opens, so that
	// write and sync failures can be injected.
	wrap func(logFile) logFile
	// syncDelay, when set by tests, replaces syncDelay.
	syncDelay time.Duration
}

// Receipt identifies a durable record.
type Receipt struct {
	// Seq is the record's place in the chain.
	Seq uint64
	// Hash is the SHA-256 of the record's line: the next record's prev.
	Hash string
}

// Log is an open audit log. Its methods are safe for concurrent use. Create
// it with [Open]; Close it when the daemon stops.
type Log struct {
	path string
	opts Options
	now  func() time.Time

	ops  chan *op
	quit chan struct{}
	done chan struct{}

	closeOnce sync.Once
	closeErr  error

	// w is the writer's state, touched only by the writer goroutine (and by
	// Open before the goroutine starts).
	w writer
}

// op is one request to the writer: a record to append, or a reopen.
type op struct {
	body   []byte // the record without seq and prev; nil for a reopen
	reopen bool
	// lazy: answer once the record is written; it is synced with the next
	// synced group, after syncDelay, or at Close, whichever comes first.
	lazy bool
	// epoch, when checkEpoch is set, is the writer's epoch when the
	// request's first record was written: the op fails if written records
	// were lost since (see writer.epoch).
	epoch      uint64
	checkEpoch bool
	res        chan opResult // buffered, capacity 1
}

type opResult struct {
	rcpt  Receipt
	epoch uint64
	err   error
}

// Open opens (creating it if needed) the audit log at path and starts its
// writer. It fails when the directory or the file is unsafe (see the package
// documentation) or cannot be opened: the daemon must not start without its
// log.
func Open(path string, opts Options) (*Log, error) {
	l := &Log{
		path: path, opts: opts, now: opts.Now,
		ops:  make(chan *op, maxBatchRecords),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.opts.Logger == nil {
		l.opts.Logger = slog.New(slog.DiscardHandler)
	}
	l.w = writer{path: path, wrap: opts.wrap, log: l.opts.Logger, lost: l.cut}
	if err := l.w.open(); err != nil {
		return nil, err
	}
	head := l.w.head()
	go l.run()
	l.anchor("opened", head)
	return l, nil
}

// Path returns the log's file name.
func (l *Log) Path() string { return l.path }

// Append writes r as one line and returns once the line is durable: written
// and synced to disk. It fills in r.Time when it is zero; r.Seq and r.Prev
// must be zero, the writer assigns them.
//
// An error means the record must be treated as not written: the daemon
// must not act on it. (After an error the line may still have reached the
// file, for example when ctx ended while the writer was syncing; a record
// is never reported durable when it is not.)
func (l *Log) Append(ctx context.Context, r *Record) (Receipt, error) {
	rcpt, _, err := l.write(ctx, r, false, false, 0)
	return rcpt, err
}

// write appends r like Append, except that with lazy set it returns once
// the line is written, before it is synced: the next synced record, the
// writer's timer (syncDelay) or Close syncs it. With checkEpoch it fails
// when records written since epoch were lost to a failed write or sync, so
// that a request whose earlier records are gone goes no further. It
// returns the writer's epoch, to be passed to the request's later writes.
func (l *Log) write(ctx context.Context, r *Record, lazy, checkEpoch bool, epoch uint64) (Receipt, uint64, error) {
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	r.Time = r.Time.UTC()
	if err := r.check(); err != nil {
		return Receipt{}, 0, fmt.Errorf("audit: %w", err)
	}
	r.DaemonHost = l.opts.DaemonHost
	body, err := marshalBody(r)
	if err != nil {
		return Receipt{}, 0, fmt.Errorf("audit: %w", err)
	}
	res, err := l.submit(ctx, &op{body: body, lazy: lazy, checkEpoch: checkEpoch, epoch: epoch, res: make(chan opResult, 1)})
	if err != nil {
		return Receipt{}, 0, err
	}
	return res.rcpt, res.epoch, res.err
}

// Reopen opens path again when it no longer names the open file, so that
// the log continues in a new file after logrotate renamed the old one; when
// path still names the open file, it keeps that file, and its writers'
// lock. The daemon calls it on SIGHUP. The log also notices a renamed or
// removed file by itself before each write, so a missed SIGHUP delays the
// switch, it loses nothing. An error means the new file could not be
// opened; later Appends fail, and each tries again.
func (l *Log) Reopen(ctx context.Context) error {
	res, err := l.submit(ctx, &op{reopen: true, res: make(chan opResult, 1)})
	if err != nil {
		return err
	}
	return res.err
}

// submit hands o to the writer and waits for its result.
func (l *Log) submit(ctx context.Context, o *op) (opResult, error) {
	select {
	case <-l.quit:
		return opResult{}, ErrClosed
	default:
	}
	select {
	case l.ops <- o:
	case <-l.quit:
		return opResult{}, ErrClosed
	case <-ctx.Done():
		return opResult{}, fmt.Errorf("audit: record not written: %w", ctx.Err())
	}
	select {
	case res := <-o.res:
		return res, nil
	case <-l.done:
		select {
		case res := <-o.res:
			return res, nil
		default:
			return opResult{}, ErrClosed
		}
	case <-ctx.Done():
		return opResult{}, fmt.Errorf("audit: gave up waiting for the record to be synced (it may or may not be in the log): %w", ctx.Err())
	}
}

// Close stops the writer once the records already handed to it are
// written, closes the file, and sends a journal entry with the chain's last
// hash. Appends after Close fail with ErrClosed. Close is idempotent.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		close(l.quit)
		<-l.done
		l.anchor("closed", l.w.head())
		l.closeErr = l.w.close()
	})
	return l.closeErr
}

// run is the writer goroutine: it takes every op that is waiting, writes the
// appends with one write and, unless all of them are lazy, one sync, and
// answers each. Lazy records left unsynced are synced after syncDelay
// unless a synced group covered them first, and at Close.
func (l *Log) run() {
	defer close(l.done)
	batch := make([]*op, 0, maxBatchRecords)
	delay := syncDelay
	if l.opts.syncDelay > 0 {
		delay = l.opts.syncDelay
	}
	timer := time.NewTimer(delay)
	timer.Stop()
	armed := false
	for {
		if !armed && l.w.dirty() {
			timer.Reset(delay)
			armed = true
		}
		batch = batch[:0]
		select {
		case o := <-l.ops:
			batch = append(batch, o)
		case <-timer.C:
			armed = false
			l.w.syncPending()
			continue
		case <-l.quit:
			// Ops handed over before Close are still written, and every
			// written record synced.
			for {
				select {
				case o := <-l.ops:
					l.process([]*op{o})
				default:
					l.w.syncPending()
					return
				}
			}
		}
		size := len(batch[0].body)
	gather:
		for len(batch) < maxBatchRecords && size < maxBatchBytes {
			select {
			case o := <-l.ops:
				batch = append(batch, o)
				size += len(o.body)
			default:
				break gather
			}
		}
		l.process(batch)
	}
}

// process handles a batch in order; a reopen splits it.
func (l *Log) process(batch []*op) {
	start := 0
	for i, o := range batch {
		if !o.reopen {
			continue
		}
		l.appendBatch(batch[start:i])
		l.w.syncPending()
		o.res <- opResult{err: l.w.reopen()}
		start = i + 1
	}
	l.appendBatch(batch[start:])
}

// appendBatch writes the records of batch with one write, synced unless
// every one of them is lazy. An op whose request lost records since its
// epoch fails alone.
func (l *Log) appendBatch(batch []*op) {
	live := batch[:0:0]
	sync := false
	for _, o := range batch {
		if o.checkEpoch && o.epoch != l.w.epoch {
			o.res <- opResult{err: fmt.Errorf("audit log %s: this request's earlier records were lost in a failed write or sync (this one was not written)", l.path)}
			continue
		}
		live = append(live, o)
		sync = sync || !o.lazy
	}
	if len(live) == 0 {
		return
	}
	bodies := make([][]byte, len(live))
	for i, o := range live {
		bodies[i] = o.body
	}
	rcpts, err := l.w.append(bodies, sync)
	for i, o := range live {
		if err != nil {
			o.res <- opResult{err: err}
		} else {
			o.res <- opResult{rcpt: rcpts[i], epoch: l.w.epoch}
		}
	}
}

// Journal sends structured entries to the systemd journal; [SystemJournal]
// is the real one, tests use a fake. Send has the signature of
// journal.Send.
type Journal interface {
	Send(message string, priority journal.Priority, fields map[string]string) error
}

// JournalFunc adapts a function to Journal.
type JournalFunc func(message string, priority journal.Priority, fields map[string]string) error

// Send calls f.
func (f JournalFunc) Send(message string, priority journal.Priority, fields map[string]string) error {
	return f(message, priority, fields)
}

// SystemJournal returns the systemd journal when journald is running, and
// nil otherwise.
func SystemJournal() Journal {
	if journal.Enabled() {
		return JournalFunc(journal.Send)
	}
	return nil
}

// journal sends the journal entry of rec. When the append failed, the entry
// still goes out, with the error instead of the hash, so that what happened
// is on record somewhere.
func (l *Log) journal(rec *Record, rcpt Receipt, appendErr error, pri journal.Priority, msg string, fields map[string]string) {
	if l.opts.Journal == nil {
		return
	}
	fields["SYSLOG_IDENTIFIER"] = "agent-sudod"
	fields["AGENT_SUDO_AUDIT_TYPE"] = string(rec.Type)
	fields["AGENT_SUDO_AUDIT_LOG"] = l.path
	if rec.Type != TypeDaemon {
		// A daemon record belongs to no request.
		fields["AGENT_SUDO_ID"] = rec.ID
		fields["AGENT_SUDO_SESSION"] = rec.Session
		fields["AGENT_SUDO_HOST"] = rec.Host
		if rec.Ref != "" {
			// Joins the entries of one request, as ref joins its records.
			fields["AGENT_SUDO_REF"] = rec.Ref
		}
	}
	if rec.Peer != nil {
		fields["AGENT_SUDO_PEER_UID"] = strconv.FormatUint(uint64(rec.Peer.UID), 10)
		fields["AGENT_SUDO_PEER_PID"] = strconv.FormatInt(int64(rec.Peer.PID), 10)
	}
	if appendErr != nil {
		fields["AGENT_SUDO_AUDIT_ERROR"] = appendErr.Error()
		pri = journal.PriErr
		msg += " (NOT in the audit log: " + appendErr.Error() + ")"
	} else {
		fields["AGENT_SUDO_RECORD_HASH"] = rcpt.Hash
		fields["AGENT_SUDO_RECORD_SEQ"] = strconv.FormatUint(rcpt.Seq, 10)
	}
	if err := l.opts.Journal.Send(msg, pri, fields); err != nil {
		l.opts.Logger.Warn("audit: could not send the journal entry", "id", rec.ID, "type", rec.Type, "err", err)
	}
}

// anchor sends the chain's head to the journal when the log is opened or
// closed, so that records removed from the end of the file while the daemon
// was not running can be detected.
func (l *Log) anchor(event string, head Receipt) {
	if l.opts.Journal == nil {
		return
	}
	fields := map[string]string{
		"SYSLOG_IDENTIFIER":      "agent-sudod",
		"AGENT_SUDO_AUDIT_TYPE":  event,
		"AGENT_SUDO_AUDIT_LOG":   l.path,
		"AGENT_SUDO_RECORD_HASH": head.Hash,
		"AGENT_SUDO_RECORD_SEQ":  strconv.FormatUint(head.Seq, 10),
	}
	msg := fmt.Sprintf("audit: log %s %s at record %d (hash %s)", l.path, event, head.Seq, head.Hash)
	if err := l.opts.Journal.Send(msg, journal.PriInfo, fields); err != nil {
		l.opts.Logger.Warn("audit: could not send the journal entry", "event", event, "err", err)
	}
}

// cut tells the journal that a failed sync cut records reported written
// from the end of the log: one entry per record lost (type "lost", with
// the lost record's hash in AGENT_SUDO_LOST_HASH), then one with the head
// of the chain after the cut (type "cut"), the anchor that holds from then
// on. The journal entries sent for the lost records name hashes that are
// no longer in the log; these entries say why.
func (l *Log) cut(lost []lostRecord, head Receipt) {
	if l.opts.Journal == nil {
		return
	}
	for _, r := range lost {
		fields := map[string]string{
			"SYSLOG_IDENTIFIER":     "agent-sudod",
			"AGENT_SUDO_AUDIT_TYPE": "lost",
			"AGENT_SUDO_AUDIT_LOG":  l.path,
			"AGENT_SUDO_LOST_HASH":  r.Hash,
			"AGENT_SUDO_LOST_SEQ":   strconv.FormatUint(r.Seq, 10),
		}
		if r.ID != "" {
			fields["AGENT_SUDO_ID"] = r.ID
		}
		msg := fmt.Sprintf("audit: %s record %d of request %s (hash %s) was reported written but is lost: the sync that was to make it durable failed",
			termtext.Esc(string(r.Type)), r.Seq, termtext.Esc(cmp.Or(r.ID, "-")), cmp.Or(r.Hash, "unknown"))
		if err := l.opts.Journal.Send(msg, journal.PriErr, fields); err != nil {
			l.opts.Logger.Warn("audit: could not send the journal entry", "event", "lost", "err", err)
		}
	}
	l.anchor("cut", head)
}

// logFile is what the writer needs of its file; *os.File has it.
type logFile interface {
	io.Writer
	io.ReaderAt
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Close() error
}
