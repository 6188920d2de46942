// Package config loads and validates the daemon's TOML configuration file,
// /etc/agent-sudo/config.toml by default (see docs/config.md for every key).
//
// The file decides who may ask the daemon for root and which commands run
// without a human looking at them, so the package is deliberately strict:
//
//   - a key it does not know is an error, not a warning: a misspelt
//     "alowed_users" or "privilegd" silently ignored would leave a security
//     setting at a value the administrator did not choose;
//   - every value is checked, and an error names the key (and, for a syntax
//     error, the line), so a bad file is refused at start-up instead of
//     misbehaving later;
//   - durations are strings with a unit ("90s", "5m"); a bare number is
//     refused rather than guessed to be seconds or nanoseconds (so
//     [Duration] is a toml.Unmarshaler as well as a TextUnmarshaler: the
//     decoder would hand it 300 as the text "300");
//   - the file must be a regular file with one link, owned by root (or by
//     the user running the daemon) and not writable by group or others, as
//     sshd and sudo require of theirs: whoever can write it can grant
//     themselves root;
//   - the rules are compiled with package rules at load time, so an invalid
//     rule stops the daemon from starting rather than being skipped;
//   - env_allow is checked against the environment policy of package runner
//     (its one deny list) at load time, so an entry that the daemon would
//     refuse stops it from starting, named, instead of making it refuse
//     every request.
//
// A key is written once: as the toml tag of its field in [Config] or in
// rules.Rule. The decoder reads the tags, and so do the list of known keys
// behind "did you mean" and the tests that keep packaging/config.example.toml
// and docs/config.md complete.
//
// A missing file is not an error when the path is the default one (the
// caller passes explicit=false): the built-in defaults, from [Default], are
// safe, asking a human about everything. A missing file that the
// administrator named explicitly is an error, since running without the
// configuration they meant would be a surprise.
//
// The package opens no sockets. It looks up users and groups only where a
// check needs them (rules' run_as and users through [OSAccounts], the
// notify_user lint), in the system's user database. A [Config] is a plain value: nothing in the package keeps
// state between calls.
package config
