//go:build !cgo || osusergo

package runner

// userDBFilesOnly is set when os/user reads /etc/passwd and /etc/group
// itself (a build without cgo, as agent-sudod ships, or with osusergo), so
// that nothing else, whatever /etc/nsswitch.conf says, decides an account.
const userDBFilesOnly = true
