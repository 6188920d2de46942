package audit

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	"github.com/agent-sudo/agent-sudo/proto"
)

// Trail writes the records of one accepted request after its request
// record. Get one from [Log.Received]; its methods are called in this order,
// each at most once: Decided, then (only for an allowed request) Started,
// then Finished. A Trail is not safe for concurrent use: one request is
// handled by one goroutine.
type Trail struct {
	log *Log
	hdr Record // the header fields of every record
	// decidedBy is the decider, repeated in the result's journal entry.
	decidedBy string
	// epoch is the writer's epoch when the request record was written:
	// the decision and exec records fail if records were lost since.
	epoch uint64
	// stoppedBy is the console that stopped the pipeline (Stopped).
	stoppedBy string
	// who and what begin and end the journal messages: the request, its
	// requester and its command (journalWho, journalWhat).
	who, what string
	// pipeline is the AGENT_SUDO_PIPELINE field of its journal entries
	// (journalPipeline).
	pipeline string
}

// Stopped records that the console by stopped the pipeline before it
// ended by itself: the result record Finished writes then says so
// (stopped_by), as does its journal entry. Call it before Finished.
func (t *Trail) Stopped(by string) {
	t.stoppedBy = by
}

// Refusal describes a request the daemon refused without asking anyone.
type Refusal struct {
	// ID is the request's id, when one could be read (proto.IDOf).
	ID string
	// Request is the decoded request, or nil when it could not be decoded.
	Request *proto.Request
	// Peer is the connecting process, or nil when its credentials could not
	// be read.
	Peer *peercred.Creds
	// Reason says why, as the daemon answered it. The record keeps at most
	// MaxRefusedReasonBytes of it.
	Reason string
	// Raw is the request line as the daemon read it, or nil when none was
	// read. Its size and SHA-256 are recorded; when it is longer than
	// MaxRefusedRequestBytes, a prefix of it is recorded instead of the
	// decoded request's pipeline, reason and environment.
	Raw []byte
}

// Bounds on what a refused request writes, so that a hostile request of up
// to proto.MaxRequestBytes cannot make a record (or a journal entry) of
// several megabytes.
const (
	// MaxRefusedReasonBytes bounds the refusal reason kept in the record.
	MaxRefusedReasonBytes = 2048
	// MaxRefusedRequestBytes is the longest request line whose decoded
	// fields are recorded in full.
	MaxRefusedRequestBytes = 8192
	// RawPrefixBytes is how much of a longer line is recorded.
	RawPrefixBytes = 1024
)

// Bound returns s if it is at most max bytes long, else its first max bytes
// (cut at a UTF-8 boundary) and a note of how long it was.
func Bound(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (cut: %d bytes in all)", strings.ToValidUTF8(s[:cut], "\ufffd"), len(s))
}

// Refused writes the request record of a refused request: one that was
// invalid, a replay, from an unauthorised peer, or that could not be
// planned. It is the request's only record. It also sends a journal entry.
// An error means the record is not durable.
func (l *Log) Refused(ctx context.Context, r Refusal) error {
	reason := Bound(r.Reason, MaxRefusedReasonBytes)
	rec := &Record{Type: TypeRequest, ID: r.ID, Request: &RequestSection{Refused: reason}}
	if r.Peer != nil {
		rec.Peer = peerOf(*r.Peer)
	}
	long := len(r.Raw) > MaxRefusedRequestBytes
	if r.Request != nil {
		fillRequest(rec, r.Request, l.opts)
		rec.Request.Refused = reason
		if long {
			// Header fields and flags are bounded by the decoder; the
			// pipeline, reason, environment and stdin content are not
			// recorded.
			rec.Request.Pipeline, rec.Request.Reason = nil, ""
			rec.Request.Env, rec.Request.EnvValues = nil, ""
			rec.Request.Stdin = nil
		}
		if rec.ID == "" {
			rec.ID = r.Request.ID
		}
	}
	if r.Raw != nil {
		sum := sha256.Sum256(r.Raw)
		rec.Request.RawBytes = len(r.Raw)
		rec.Request.RawSHA256 = hex.EncodeToString(sum[:])
		if long {
			rec.Request.RawPrefix = strings.ToValidUTF8(string(r.Raw[:RawPrefixBytes]), "\ufffd")
		}
	}
	rcpt, err := l.Append(ctx, rec)
	fields := map[string]string{
		"AGENT_SUDO_STATUS": string(proto.StatusError),
		"AGENT_SUDO_REASON": reason,
	}
	what := "(no request decoded)"
	switch {
	case long:
		what = fmt.Sprintf("(a request line of %d bytes)", len(r.Raw))
	case r.Request != nil:
		what = journalWhat(r.Request.Pipeline)
		setPipeline(fields, r.Request.Pipeline)
	}
	l.journal(rec, rcpt, err, journal.PriNotice, fmt.Sprintf("%s refused (%s): %s",
		journalWho(rec), journalText(reason, maxJournalReason), what), fields)
	return err
}

// Received writes the request record of a request that was decoded and
// planned and is about to be decided, and returns the Trail for its later
// records. It returns once the record is written, without waiting for its
// sync: the exec record's sync (Started) covers it, or, for a request that
// does not run, a later sync. An error means the record is not written; the
// request must then not be decided or run. Only a failure is sent to the
// journal.
func (l *Log) Received(ctx context.Context, req *proto.Request, peer peercred.Creds) (*Trail, error) {
	rec := &Record{Type: TypeRequest, Peer: peerOf(peer), Request: &RequestSection{}}
	fillRequest(rec, req, l.opts)
	rcpt, epoch, err := l.write(ctx, rec, true, false, 0)
	if err != nil {
		// Not in the log, and not run: the journal is the only record.
		fields := map[string]string{"AGENT_SUDO_STATUS": string(proto.StatusError)}
		setPipeline(fields, req.Pipeline)
		l.journal(rec, rcpt, err, journal.PriErr, fmt.Sprintf("%s received: %s", journalWho(rec), journalWhat(req.Pipeline)), fields)
		return nil, err
	}
	// The later records name the peer without its ancestry and container:
	// the request record holds them once.
	hdr := Record{ID: rec.ID, Ref: rcpt.Hash, Session: rec.Session, Host: rec.Host,
		Peer: &Peer{UID: rec.Peer.UID, PID: rec.Peer.PID, Exe: rec.Peer.Exe}}
	return &Trail{log: l, hdr: hdr, epoch: epoch, who: journalWho(rec), what: journalWhat(req.Pipeline),
		pipeline: journalPipeline(req.Pipeline)}, nil
}

// Decided writes the decision record and sends a journal entry. Like
// Received it does not wait for the sync. An error means the record is not
// written, or the request record was lost meanwhile: the request must then
// not run, even if it was allowed.
func (t *Trail) Decided(ctx context.Context, d approval.Decision) error {
	rec := t.record(TypeDecision)
	rec.Decision = &DecisionSection{Verdict: string(d.Verdict), By: d.By, Message: d.Message, Approver: personOf(d.Approver),
		Signed: signedByOf(d.Signed), Approvals: approvalsOf(d.Approvals)}
	t.decidedBy = d.By
	rcpt, _, err := t.log.write(ctx, rec, true, true, t.epoch)
	fields := map[string]string{
		"AGENT_SUDO_VERDICT":    string(d.Verdict),
		"AGENT_SUDO_DECIDED_BY": d.By,
	}
	t.setPipeline(fields)
	pri := journal.PriInfo
	if d.Verdict != approval.Allow {
		pri = journal.PriNotice
	}
	t.log.journal(rec, rcpt, err, pri, fmt.Sprintf("%s %s by %s: %s", t.who, d.Verdict, journalText(d.By, maxJournalBy), t.what), fields)
	return err
}

// Started writes the exec record: exactly what spec will run. It returns
// only once the record is durable (written and synced), and with it the
// request and decision records, which its one sync covers; an error means
// they are not (or the earlier records were lost), and spec must not be
// run. Call it right before runner.Run. Only a failure is sent to the
// journal.
func (t *Trail) Started(ctx context.Context, spec runner.Spec) error {
	rec := t.record(TypeExec)
	x := &ExecSection{
		Stages: make([]ExecStage, len(spec.Stages)),
		RunAs: RunAs{User: spec.Target.Name, UID: spec.Target.UID, GID: spec.Target.GID,
			Groups: spec.Target.Groups},
		Mode: string(spec.Mode),
		Dir:  spec.Dir,
	}
	if x.Dir == "" {
		x.Dir = "/"
	}
	x.DirChain, x.DirWritable = spec.DirChain, writablesOf(spec.DirUntrusted)
	if spec.Mode == runner.ModeSudo {
		x.SudoPath = spec.SudoPath
	}
	for i, c := range spec.Stages {
		x.Stages[i] = ExecStage{Path: c.Path, Argv: c.Args, Chain: c.Chain, Writable: writablesOf(c.Untrusted)}
		if c.Program != nil {
			x.Stages[i].Dev, x.Stages[i].Ino = c.Program.Dev, c.Program.Ino
			x.Stages[i].SHA256 = hex.EncodeToString(c.Program.SHA256[:])
		}
		if c.Link != "" && c.Link != c.Path {
			x.Stages[i].Link = c.Link
		}
	}
	env := make(map[string]string, len(spec.Env))
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	x.Env, x.EnvValues = encodeEnv(env, t.log.opts.EnvValues)
	rec.Exec = x
	rcpt, _, err := t.log.write(ctx, rec, false, true, t.epoch)
	if err != nil {
		fields := map[string]string{"AGENT_SUDO_STATUS": string(proto.StatusError), "AGENT_SUDO_DECIDED_BY": t.decidedBy}
		t.setPipeline(fields)
		t.log.journal(rec, rcpt, err, journal.PriErr, fmt.Sprintf("%s about to run: %s", t.who, t.what), fields)
	}
	return err
}

// Finished writes the result record from the response the daemon is about
// to send and the runner's result, and sends a journal entry. res is nil
// when the pipeline could not be started (resp is then the error answer).
// Call it before writing resp to the client. It returns once the record is
// written, without waiting for its sync, which the next synced group, the
// writer's timer or Close does: the answer is not held back by a disk
// flush. An error means the record is not written; the command has run, so
// the daemon should still answer.
func (t *Trail) Finished(ctx context.Context, resp *proto.Response, res *runner.Result) error {
	rec := t.record(TypeResult)
	r := &ResultSection{
		Status: resp.Status, Message: resp.Message,
		ExitCodes:       []int{},
		Stages:          []ResultStage{},
		StdoutBytes:     len(resp.Stdout),
		StdoutTruncated: resp.StdoutTruncated,
		StoppedBy:       t.stoppedBy,
	}
	// The runner hashed the output as it read it; hashing 16 MiB again
	// here would delay the answer.
	ranHashes := res != nil && len(res.Stages) == len(resp.Stages)
	if ranHashes {
		r.StdoutSHA256 = hex.EncodeToString(res.StdoutSHA256[:])
	} else {
		r.StdoutSHA256 = hashValue(resp.Stdout)
	}
	for i, st := range resp.Stages {
		sum := ""
		if ranHashes {
			sum = hex.EncodeToString(res.Stages[i].StderrSHA256[:])
		} else {
			sum = hashValue(st.Stderr)
		}
		r.ExitCodes = append(r.ExitCodes, st.ExitCode)
		r.Stages = append(r.Stages, ResultStage{
			ExitCode: st.ExitCode, StderrBytes: len(st.Stderr),
			StderrTruncated: st.StderrTruncated, StderrSHA256: sum,
		})
	}
	if res != nil {
		r.SurvivorsCount = len(res.Survivors)
		for i, sv := range res.Survivors {
			if i == MaxSurvivors {
				break
			}
			r.Survivors = append(r.Survivors, Survivor{PID: sv.PID, Exe: strings.ToValidUTF8(sv.Exe, "\uFFFD")})
		}
		r.CgroupError = res.CgroupError
	}
	if res != nil && !res.Started.IsZero() {
		r.Started, r.Ended = res.Started.UTC(), res.Ended.UTC()
		r.DurationNS = int64(res.Ended.Sub(res.Started))
	}
	rec.Result = r
	rcpt, _, err := t.log.write(ctx, rec, true, false, 0)
	fields := map[string]string{
		"AGENT_SUDO_STATUS":     string(resp.Status),
		"AGENT_SUDO_EXIT_CODES": JoinExitCodes(r.ExitCodes, ","),
		"AGENT_SUDO_DECIDED_BY": t.decidedBy,
	}
	t.setPipeline(fields)
	if r.DurationNS > 0 {
		fields["AGENT_SUDO_DURATION_NS"] = strconv.FormatInt(r.DurationNS, 10)
	}
	if r.StoppedBy != "" {
		fields["AGENT_SUDO_STOPPED_BY"] = r.StoppedBy
	}
	pri := journal.PriInfo
	if resp.Status != proto.StatusOK {
		pri = journal.PriWarning
	}
	outcome := "exit " + JoinExitCodes(r.ExitCodes, ",")
	if len(r.ExitCodes) == 0 {
		outcome = "nothing ran"
	}
	if r.DurationNS > 0 {
		outcome += " after " + time.Duration(r.DurationNS).Round(time.Millisecond).String()
	}
	if r.StoppedBy != "" {
		outcome += ", stopped by " + journalText(r.StoppedBy, maxJournalBy)
	}
	if t.decidedBy != "" {
		outcome += ", allowed by " + journalText(t.decidedBy, maxJournalBy)
	}
	t.log.journal(rec, rcpt, err, pri, fmt.Sprintf("%s finished %s (%s): %s",
		t.who, journalText(string(resp.Status), maxJournalBy), outcome, t.what), fields)
	return err
}

// Bounds on the untrusted parts of a journal message, in bytes of their
// escaped form, so that the message stays one readable line: the fields
// beside it keep the values whole (bounded as the record is).
const (
	maxJournalCommand = 240
	maxJournalReason  = 240
	maxJournalBy      = 120
	maxJournalLabel   = 64
)

// journalText returns s escaped for a terminal (journalctl prints the
// message as it is) and bounded to max bytes.
func journalText(s string, max int) string {
	return Bound(termtext.Esc(s), max)
}

// journalWho begins a journal message: the request, who sent it (the
// kernel's uid) and the session it claimed. See docs/audit.md, "The
// journal".
func journalWho(rec *Record) string {
	var b strings.Builder
	b.WriteString("audit: request ")
	b.WriteString(journalText(cmp.Or(rec.ID, "-"), maxJournalLabel))
	if rec.Peer != nil {
		fmt.Fprintf(&b, " by uid %d", rec.Peer.UID)
	} else {
		b.WriteString(" by an unknown peer")
	}
	if rec.Session != "" {
		fmt.Fprintf(&b, " (session %s)", journalText(rec.Session, maxJournalLabel))
	}
	return b.String()
}

// journalWhat ends a journal message: the command, as a shell line,
// escaped and bounded.
func journalWhat(pipeline [][]string) string {
	if len(pipeline) == 0 {
		return "(no command)"
	}
	line, _ := termtext.CommandLine(pipeline)
	return Bound(line, maxJournalCommand)
}

// MaxJournalPipeline bounds the AGENT_SUDO_PIPELINE field: a pipeline whose
// JSON is longer is not sent (the message still names its start).
const MaxJournalPipeline = 16 << 10

// journalPipeline returns the pipeline as the JSON array of argv arrays the
// record has, for the AGENT_SUDO_PIPELINE field that lets 'agent-sudo
// audit --journal-dir' show the command; "" when there is none or it is
// longer than MaxJournalPipeline.
func journalPipeline(pipeline [][]string) string {
	if len(pipeline) == 0 {
		return ""
	}
	b, err := json.Marshal(pipeline)
	if err != nil || len(b) > MaxJournalPipeline {
		return ""
	}
	return string(b)
}

// setPipeline adds AGENT_SUDO_PIPELINE to fields when journalPipeline has
// one.
func setPipeline(fields map[string]string, pipeline [][]string) {
	if p := journalPipeline(pipeline); p != "" {
		fields["AGENT_SUDO_PIPELINE"] = p
	}
}

// setPipeline adds the trail's AGENT_SUDO_PIPELINE to fields.
func (t *Trail) setPipeline(fields map[string]string) {
	if t.pipeline != "" {
		fields["AGENT_SUDO_PIPELINE"] = t.pipeline
	}
}

// record returns a new record of type typ with the trail's header.
func (t *Trail) record(typ Type) *Record {
	r := t.hdr
	r.Type = typ
	return &r
}

func peerOf(c peercred.Creds) *Peer {
	return &Peer{UID: c.UID, PID: c.PID, Exe: c.Exe, Ancestry: ancestryOf(c.Ancestry), Container: containerOf(c.Container)}
}

// fillRequest copies req into rec's header and request section, with
// environment values and the stdin content recorded as opts says.
func fillRequest(rec *Record, req *proto.Request, opts Options) {
	rec.ID, rec.Session, rec.Host = req.ID, req.Session, req.Host
	s := rec.Request
	s.Pipeline = req.Pipeline
	s.Reason = req.Reason
	priv, fwd := req.Privileged, req.ForwardAgent
	s.Privileged, s.ForwardAgent = &priv, &fwd
	s.Cwd = req.Cwd
	if !req.Time.IsZero() {
		s.RequestTime = req.Time
	}
	env := req.Env
	if env == nil {
		env = map[string]string{}
	}
	s.Env, s.EnvValues = encodeEnv(env, opts.EnvValues)
	if len(req.Stdin) > 0 {
		sum := sha256.Sum256(req.Stdin)
		s.StdinBytes, s.StdinSHA256 = len(req.Stdin), hex.EncodeToString(sum[:])
		if opts.Stdin {
			s.Stdin = req.Stdin
		}
	}
}

// Ref returns the hash of the request's request record, which every later
// record of the request carries as ref and a signed decision names.
func (t *Trail) Ref() string {
	return t.hdr.Ref
}
