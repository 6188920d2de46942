package testenv

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// Pty opens a new pseudo-terminal and returns its two sides, both closed
// when the test ends, and the terminal side's path; cols×rows is its size
// when both are set. It skips the test where no pseudo-terminal can be
// opened. Neither side becomes the test's controlling terminal.
func Pty(t testing.TB, cols, rows uint16) (master, tty *os.File, path string) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("the pseudo-terminal's number: %v", err)
	}
	if cols > 0 && rows > 0 {
		if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
			t.Fatalf("set the pseudo-terminal's size: %v", err)
		}
	}
	path = "/dev/pts/" + strconv.Itoa(n)
	tty, err = os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal side: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty, path
}
