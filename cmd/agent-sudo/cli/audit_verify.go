package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// auditVerifyOptions are the flags of audit verify.
type auditVerifyOptions struct {
	auditSource
	anchors  listFlag
	passkeys string
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func auditVerifyFlags(_ *invocation) (*flag.FlagSet, *auditVerifyOptions) {
	o := &auditVerifyOptions{}
	fset := auditVerifyUsage().newFlagSet()
	o.addFlags(fset)
	fset.Var(&o.anchors, "anchor", "also check that the record with `hash` (from the journal) is in the log; repeatable")
	fset.StringVar(&o.passkeys, "passkeys", passkey.DefaultDir, "check the signed decisions against the passkeys enrolled in `dir` (revoked ones included)")
	return fset, o
}

func auditVerifyUsage() *usage {
	return &usage{
		name:     "audit verify",
		synopsis: []string{"agent-sudo audit verify [flags] [FILE...]"},
		text: `Check that every line of the audit log is chained to the one before it, and
name the first line that was altered, removed, inserted or moved. Without
FILE it checks the configured log (--log, or audit_log of --config) and its
rotated files, oldest first; with FILE... the files given, in the order
given (oldest first), as one chain.

With --log given more than once (the logs of several daemons), each log and
its rotated files is a chain of its own: every one is checked, each line of
the output starts with the log's path, a broken chain is named by its file
and line, and the status is 65 if any chain is broken.

Records cut off the end of the log can only be noticed with --anchor and a
hash from the journal (journalctl -o verbose AGENT_SUDO_AUDIT_TYPE=result
shows AGENT_SUDO_RECORD_HASH). See docs/audit.md.

Every decision signed with a passkey on the web approver is checked again:
its statement must name its own request record, and its signature must
verify against the passkey enrolled under its credential id (--passkeys,
revoked passkeys included). One that does not is reported like a broken
chain, with status 65.
`,
		exits: []exitDoc{
			{"0", "the chain is intact, and every --anchor is in it"},
			{"2", "usage error: a bad flag or flag value, or FILE with --log or --config"},
			{"65", "the chain is broken, a line is corrupt, or an anchor is missing"},
			{"66", "the log cannot be read"},
			{"74", "the output could not be written"},
			{"78", "the configuration cannot be loaded (pass --log or FILE)"},
			{"130", "interrupted"},
		},
		args:         true,
		interspersed: true,
	}
}

func auditVerifyHelp(inv *invocation, w io.Writer) error {
	fset, _ := auditVerifyFlags(inv)
	return auditVerifyUsage().write(w, fset)
}

// auditVerifyMain is "agent-sudo audit verify".
func auditVerifyMain(ctx context.Context, inv *invocation, args []string) int {
	u := auditVerifyUsage()
	fset, o := auditVerifyFlags(inv)
	files, code, ok := inv.parse(u, fset, args)
	if !ok {
		return code
	}
	if len(files) > 0 && (len(o.logs) > 0 || o.config != "") {
		return inv.fail(exitUsage, "audit verify: give either files or --log/--config, not both")
	}
	for _, a := range o.anchors {
		if !isHex64(strings.ToLower(a)) {
			return inv.fail(exitUsage, "audit verify: --anchor %q is not a SHA-256 in hex (64 hex digits)", a)
		}
	}
	if len(o.logs) > 1 && len(o.anchors) > 0 {
		return inv.fail(exitUsage, "audit verify: --anchor is a hash from one daemon's journal: give it with one --log")
	}
	if len(files) > 0 {
		return inv.withOutput("audit verify", func(out *errWriter) int {
			return auditVerify(ctx, inv, out, "", files, o.anchors, o.passkeys)
		})
	}
	paths, err := o.paths()
	if err != nil {
		return inv.fail(exitConfig, "audit verify: %v; pass --log FILE to read a log directly", err)
	}
	if len(paths) == 1 {
		if files, err = audit.Files(paths[0]); err != nil {
			return inv.unreadable("audit verify", err)
		}
		return inv.withOutput("audit verify", func(out *errWriter) int {
			return auditVerify(ctx, inv, out, "", files, o.anchors, o.passkeys)
		})
	}
	return inv.withOutput("audit verify", func(out *errWriter) int {
		return auditVerifyLogs(ctx, inv, out, paths, o.passkeys)
	})
}

// auditVerifyLogs checks the chain of each log at paths (with its rotated
// files) on its own: each daemon's log is a chain of its own. It checks
// them all, prints each result prefixed with the log's path, and returns
// 65 if a chain is broken, else 66 if a log cannot be read, else 0.
func auditVerifyLogs(ctx context.Context, inv *invocation, out *errWriter, paths []string, passkeys string) int {
	code := 0
	var failed []string
	for _, path := range paths {
		files, err := audit.Files(path)
		c := 0
		if err != nil {
			c = inv.unreadable("audit verify", err)
		} else {
			c = auditVerify(ctx, inv, out, path+": ", files, nil, passkeys)
		}
		switch {
		case c == exitInterrupted:
			return c
		case c != 0:
			failed = append(failed, path)
			if code != exitDataErr {
				code = c
			}
		}
	}
	if len(failed) > 0 {
		inv.say("audit verify: %d of %d logs failed: %s", len(failed), len(paths), strings.Join(failed, ", "))
	}
	return code
}

// auditVerify checks the chain of files, oldest first, and prints the
// result, each line of it after prefix.
func auditVerify(ctx context.Context, inv *invocation, out *errWriter, prefix string, files, anchors []string, passkeys string) int {
	res, err := audit.VerifyWith(ctx, audit.VerifyOptions{Anchors: anchors, Signed: signedChecker(passkeys)}, files...)
	var ce *audit.ChainError
	switch {
	case errors.As(err, &ce):
		return inv.fail(exitDataErr, "audit verify: %v", ce)
	case ctx.Err() != nil:
		return inv.fail(exitInterrupted, "audit verify: interrupted")
	case err != nil:
		return inv.unreadable("audit verify", err)
	}
	out.WriteString(fmt.Sprintf("%sok: %d %s in %d %s\n", prefix, res.Records, termtext.Plural(res.Records, "record"), res.Files, termtext.Plural(res.Files, "file")))
	if res.Records > 0 {
		out.WriteString(fmt.Sprintf("%slast record: seq %d, hash %s\n", prefix, res.HeadSeq, res.Head))
	}
	if res.Signed > 0 {
		out.WriteString(fmt.Sprintf("%ssigned decisions: %d, every signature verified\n", prefix, res.Signed))
	}
	if res.Records > 0 && res.Start != audit.Genesis {
		out.WriteString(fmt.Sprintf("%snote: the first file checked starts at record %d, continuing a file that was not checked (rotated away?); lines removed from the start of the first file would not show\n", prefix, res.StartSeq))
	}
	return 0
}

// signedChecker checks a signed decision against the passkeys in dir,
// revoked ones included (they were valid when they signed), read once at
// the first signed decision.
func signedChecker(dir string) func(*audit.SignedBy) error {
	var keys []passkey.Enrolled
	var loadErr error
	loaded := false
	return func(s *audit.SignedBy) error {
		if !loaded {
			keys, loadErr = passkey.Store{Dir: dir}.List(true)
			loaded = true
		}
		if loadErr != nil {
			return loadErr
		}
		name, err := passkey.VerifyWith(keys, s.Signed)
		if err != nil {
			return err
		}
		if name != s.Approver {
			return fmt.Errorf("signed by the passkey of %q, but recorded as %q's", name, s.Approver)
		}
		return nil
	}
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
