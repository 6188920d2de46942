package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/notify"
	"github.com/agent-sudo/agent-sudo/internal/rules"
	"github.com/agent-sudo/agent-sudo/internal/runner"
)

// Validate checks every field and returns all problems found, each naming
// its key, joined with errors.Join; nil means the configuration is usable.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}

	checkSocket := func(key, p string) {
		if err := checkPath(p); err != nil {
			add(key, "%v", err)
		} else if len(p) > maxSocketPath {
			add(key, "%q is %d bytes long; a Unix socket path may be at most %d bytes", p, len(p), maxSocketPath)
		}
	}
	checkSocket("socket", c.Socket)
	checkSocket("approver_socket", c.ApproverSocket)
	if err := checkPath(c.Passkeys); err != nil {
		add("passkeys", "%v", err)
	}
	if c.WebApproverURL != "" {
		if err := checkWebApproverURL(c.WebApproverURL); err != nil {
			add("web_approver_url", "%v", err)
		}
	}
	if c.Socket == c.ApproverSocket && c.Socket != "" {
		add("approver_socket", "%q is also the agents' socket; the two must differ", c.ApproverSocket)
	}
	if err := rules.CheckAccount(c.SocketGroup, "group"); err != nil {
		add("socket_group", "%v", err)
	}
	for i, u := range c.AllowedUsers {
		if err := rules.CheckAccount(u, "user"); err != nil {
			add(fmt.Sprintf("allowed_users[%d]", i), "%v", err)
		}
	}
	for i, g := range c.AllowedGroups {
		if err := rules.CheckAccount(g, "group"); err != nil {
			add(fmt.Sprintf("allowed_groups[%d]", i), "%v", err)
		}
	}
	if err := checkPath(c.AuditLog); err != nil {
		add("audit_log", "%v", err)
	}

	switch c.Exec {
	case runner.ModeSudo, runner.ModeDirect:
	default:
		add("exec", "%q is not valid; it must be %q or %q", string(c.Exec), runner.ModeSudo, runner.ModeDirect)
	}
	switch c.Cgroup {
	case CgroupRequired, CgroupBestEffort:
	default:
		add("cgroup", "%q is not valid; it must be %q or %q", string(c.Cgroup), CgroupRequired, CgroupBestEffort)
	}
	if err := checkPath(c.SudoPath); err != nil {
		add("sudo_path", "%v", err)
	}
	if c.SecurePath == "" {
		add("secure_path", "must not be empty")
	} else {
		for i, d := range c.TrustedDirs() {
			if d == "" {
				add("secure_path", "element %d is empty; an empty PATH element means the current directory, which an agent may control", i+1)
			} else if err := checkPath(d); err != nil {
				add("secure_path", "element %d: %v", i+1, err)
			}
		}
	}
	if u := c.UnprivilegedUser; u != "" {
		if err := rules.CheckAccount(u, "user"); err != nil {
			add("unprivileged_user", "%v", err)
		} else if u == "root" || u == "0" {
			add("unprivileged_user", "%q is root; unprivileged requests must not run as root", u)
		}
	}
	// The environment policy (package runner) is checked here, once: an
	// entry it would refuse stops the daemon from starting.
	for i, e := range c.EnvAllow {
		if err := runner.ValidAllowPattern(e); err != nil {
			add(fmt.Sprintf("env_allow[%d]", i), "%v", err)
		}
	}

	for _, r := range Ranges() {
		if msg := r.check(c); msg != "" {
			add(r.Key, "%s", msg)
		}
	}

	if len(c.Notify) > notify.MaxNotifiers {
		add("notify", "lists %d notifiers; at most %d are allowed", len(c.Notify), notify.MaxNotifiers)
	}
	for i, argv := range c.Notify {
		if err := notify.Check(fmt.Sprintf("notify[%d]", i), argv); err != nil {
			errs = append(errs, err)
		}
	}
	if u := c.NotifyUser; u == "" {
		add("notify_user", "must not be empty; notifiers run as this user (the default is \"nobody\")")
	} else if err := rules.CheckAccount(u, "user"); err != nil {
		add("notify_user", "%v", err)
	} else if u == "root" || u == "0" {
		add("notify_user", "%q is root; notifiers run commands with text the agent chose and never run as root", u)
	}

	// Rules are checked against the trusted directories only when those
	// are valid; otherwise the error would be about secure_path twice.
	dirs := c.TrustedDirs()
	if slices.ContainsFunc(dirs, func(d string) bool { return checkPath(d) != nil }) {
		dirs = nil
	}
	if _, err := rules.New(c.Rules, dirs, nil); err != nil {
		errs = append(errs, err) // already names the rule: "rule 2 (\"x\"): ..."
	}
	return errors.Join(errs...)
}

// checkPath requires a clean absolute path.
func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("must not be empty")
	case !filepath.IsAbs(p):
		return fmt.Errorf("%q is not an absolute path", p)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%q contains a NUL byte", p)
	case filepath.Clean(p) != p:
		return fmt.Errorf("%q is not a clean path; write %q", p, filepath.Clean(p))
	}
	return nil
}

// checkWebApproverURL accepts http:// or https:// and a host, with an
// optional port, and nothing else: no user, path, query or fragment, so
// that {url} carries nothing but the request's id.
func checkWebApproverURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, " \t\r\n") {
		return fmt.Errorf("%q: want scheme://host[:port], https or http, nothing after the host", s)
	}
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return fmt.Errorf("%q: the port %q is not a port number from 1 to 65535", s, p)
		}
	}
	return nil
}
