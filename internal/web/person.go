package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
)

// Getent is the program nssUID runs: glibc's getent, which asks the
// system's name service switch (files, LDAP, SSSD, userdb, ...), where a
// static Go binary's os/user reads /etc/passwd alone.
const Getent = "/usr/bin/getent"

// nssTimeout bounds one lookup: a directory that does not answer fails it.
const nssTimeout = 10 * time.Second

// nssUID returns the uid of the user name as the system's name service
// switch resolves it, by running Getent ("getent passwd -- NAME", an
// absolute path, argv, no shell) with the environment env (nil: an empty
// one, so that nothing the caller inherited changes the lookup; a test
// passes nss_wrapper's). found is false, with no error, when the name
// service says there is no such user (getent's status 2). name must be a
// plain user name (no ':', no line break, not starting with '-').
func nssUID(ctx context.Context, name string, env []string) (uid uint32, found bool, err error) {
	if name == "" || strings.ContainsAny(name, ":\n\r\x00") || name[0] == '-' {
		return 0, false, fmt.Errorf("%q is not a user name to look up", name)
	}
	ctx, cancel := context.WithTimeout(ctx, nssTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Getent, "passwd", "--", name)
	// A session of its own, no terminal, stdin /dev/null, no descriptor
	// beyond 0-2: the least a lookup needs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// An NSS helper that getent started and that holds its output open
	// does not keep the enrolment waiting past the timeout.
	cmd.WaitDelay = time.Second
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 2 && ctx.Err() == nil:
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("look up user %q with %s: %w (%q)", name, Getent, err, strings.TrimSpace(stderr.String()))
	}
	line, rest, _ := bytes.Cut(stdout.Bytes(), []byte("\n"))
	fields := strings.Split(string(line), ":")
	if len(bytes.TrimSpace(rest)) != 0 || len(fields) != 7 || fields[0] != name {
		return 0, false, fmt.Errorf("look up user %q with %s: unexpected answer %q", name, Getent, stdout.String())
	}
	id, err := account.ParseID(fields[2])
	if err != nil {
		return 0, false, fmt.Errorf("look up user %q with %s: its uid: %w", name, Getent, err)
	}
	return id, true, nil
}

// ResolvePerson returns who the approver name is for the two-person rule,
// as the system's name service (getent, with environment
// env; nil for none) resolves it: "uid N" for a login user, "passkey NAME"
// for a name no user has. Root's side of an enrolment calls it, so that the
// daemon, whose static build reads /etc/passwd alone, tells a directory
// user's passkey and console apart no more than the kernel's login uid
// does. It runs in root's side of the enrolment, never in the daemon,
// which starts no process but through internal/spawn.
func ResolvePerson(ctx context.Context, name string, env []string) (string, error) {
	if err := passkey.CheckName(name); err != nil {
		return "", err
	}
	uid, found, err := nssUID(ctx, name, env)
	if err != nil {
		return "", fmt.Errorf("who is %q: %w", name, err)
	}
	if !found {
		return "passkey " + name, nil
	}
	return "uid " + strconv.FormatUint(uint64(uid), 10), nil
}
