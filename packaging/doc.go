// Package packaging holds no code. It exists so that the files that install
// agent-sudo on a system (the systemd units in systemd/, sysusers.d/ and
// tmpfiles.d/ entries, and config.example.toml) have tests beside them.
//
// Those files are part of the security boundary: the socket unit decides who
// can connect at all, and the directory entries decide who can replace the
// sockets or read the audit log. The tests check them with systemd's own
// tools where available and against the daemon's built-in defaults, so that
// the packaging and the daemon cannot silently disagree.
package packaging
