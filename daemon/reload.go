package daemon

import (
	"fmt"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/config"
)

// Reload replaces the server's policy with one built from next, a
// validated configuration that Reload takes over: requests accepted from
// then on are served under it, and a request already accepted keeps the
// policy it started with. The keys that need a restart keep their current
// values; the ones whose value in next differs are returned. When next
// cannot be built into a policy (anything agent-sudod --check-config
// refuses), Reload returns the error and changes nothing.
func (s *Server) Reload(next *config.Config) (needRestart []string, err error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	cur := s.policy()
	needRestart = config.KeepRestartKeys(next, cur.cfg)
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
