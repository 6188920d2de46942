// Package packaging holds no code. It exists so that the files that install
// agent-sudo on a system (the systemd units in systemd/, sysusers.d/ and
// tmpfiles.d/ entries, and config.example.toml) have tests beside them.
// The Debian package is described by nfpm.yaml, with its maintainer scripts
// and copyright in deb/; its /etc/agent-sudo/config.toml is the example with
// every line commented out, made by `make dist/config.toml`; debbuild/ is
// the module that builds the package (see docs/install.md).
//
// Those files are part of the security boundary: the socket unit decides who
// can connect at all, and the directory entries decide who can replace the
// sockets or read the audit log. The tests check them with systemd's own
// tools where available and against the daemon's built-in defaults, so that
// the packaging and the daemon cannot silently disagree.
package packaging
