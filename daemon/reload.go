package daemon

import (
	"fmt"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/config"
)

// restartKey is a configuration key that a reload cannot change: what the
// daemon built from it at start (a socket, the audit log, the connection
// limits) stays for as long as it runs.
type restartKey struct {
	key string
	// keep sets next's value of the key to cur's, and reports whether
	// they differed.
	keep func(next, cur *config.Config) (changed bool)
}

// keepField makes a restartKey's keep for the field field returns.
func keepField[T comparable](field func(*config.Config) *T) func(next, cur *config.Config) bool {
	return func(next, cur *config.Config) bool {
		n, c := field(next), field(cur)
		changed := *n != *c
		*n = *c
		return changed
	}
}

// restartKeys lists the keys that need a restart to change, with the field
// each one sets. Every other key takes effect on reload; reloadableKeys
// lists those, and a test checks that the two lists hold every key.
func restartKeys() []restartKey {
	return []restartKey{
		{"socket", keepField(func(c *config.Config) *string { return &c.Socket })},
		// The socket file's group; also whom the daemon serves when
		// neither allowed_users nor allowed_groups is set.
		{"socket_group", keepField(func(c *config.Config) *string { return &c.SocketGroup })},
		{"approver_socket", keepField(func(c *config.Config) *string { return &c.ApproverSocket })},
		{"audit_log", keepField(func(c *config.Config) *string { return &c.AuditLog })},
		{"audit_env_values", keepField(func(c *config.Config) *bool { return &c.AuditEnvValues })},
		{"audit_stdin", keepField(func(c *config.Config) *bool { return &c.AuditStdin })},
		{"exec", keepField(func(c *config.Config) *config.ExecMode { return &c.Exec })},
		{"cgroup", keepField(func(c *config.Config) *config.CgroupMode { return &c.Cgroup })},
		{"sudo_path", keepField(func(c *config.Config) *string { return &c.SudoPath })},
		{"max_connections", keepField(func(c *config.Config) *int { return &c.MaxConnections })},
		{"max_connections_per_user", keepField(func(c *config.Config) *int { return &c.MaxConnectionsPerUser })},
		{"root_connections", keepField(func(c *config.Config) *int { return &c.RootConnections })},
		{"max_requests_per_minute", keepField(func(c *config.Config) *int { return &c.MaxRequestsPerMinute })},
	}
}

// reloadableKeys are the keys a reload applies, to requests accepted after
// it.
func reloadableKeys() []string {
	return []string{
		"allowed_users", "allowed_groups", "secure_path", "unprivileged_user", "env_allow",
		"max_clock_skew", "approval_timeout", "command_timeout", "kill_grace", "read_timeout",
		"first_byte_timeout", "shutdown_timeout", "session_grant_ttl", "notify", "notify_user", "notify_timeout", "rule",
	}
}

// Reload replaces the server's policy with one built from next, a
// validated configuration that Reload takes over: requests accepted from
// then on are served under it, and a request already accepted keeps the
// policy it started with. The keys that need a restart keep their current
// values; the ones whose value in next differs are returned. When next
// cannot be built into a policy (anything agentsudod --check-config
// refuses), Reload returns the error and changes nothing.
func (s *Server) Reload(next *config.Config) (needRestart []string, err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cur := s.policy()
	for _, k := range restartKeys() {
		if k.keep(next, cur.cfg) {
			needRestart = append(needRestart, k.key)
		}
	}
	pol, err := build(next)
	if err != nil {
		return nil, err
	}
	s.logLint(next)
	s.pol.Store(pol)
	return needRestart, nil
}

// Rules returns the number of rules in force.
func (s *Server) Rules() int { return len(s.policy().cfg.Rules) }

// restartMessage says which changed keys were not applied.
func restartMessage(keys []string) string {
	return fmt.Sprintf("changed in the configuration file but not applied until agent-sudod restarts: %s", strings.Join(keys, ", "))
}
