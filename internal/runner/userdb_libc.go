//go:build cgo && !osusergo

package runner

// userDBFilesOnly is unset when os/user asks the C library, which follows
// /etc/nsswitch.conf to modules (systemd, sss, ldap) whose answers no stat
// of a file proves unchanged.
const userDBFilesOnly = false
