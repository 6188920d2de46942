package cli

import "github.com/agent-sudo/agent-sudo/internal/termtext"

// visible is termtext.Visible: agent-sudo's own one-line diagnostics, with
// the untrusted text they embed made safe for a terminal.
func visible(s string) string { return termtext.Visible(s) }
