package web

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/spawn"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// EnrolConfig is what Enrol needs once the command line is checked.
type EnrolConfig struct {
	// Name is the approver the passkey is enrolled for (passkey.CheckName).
	Name string
	// Host and Port are where the page is served (Listen: every address of
	// Host, a port only root may take, which the caller checked).
	Host string
	Port uint16
	// Origin is the page's origin as the phone's browser sees it, and
	// OriginGiven whether the human named it (--origin) rather than it
	// being Host and Port's; RPID is the passkey's relying party id.
	Origin      string
	OriginGiven bool
	RPID        string
	// SignFrom are the origins the passkey will sign from (EnrolOrigins).
	SignFrom []string
	// Cert returns the TLS certificate and its fingerprint; nil serves
	// plain HTTP (a loopback address, which the caller checked).
	Cert func() (tls.Certificate, string, error)
	// UID and GID are the user the page is served as, never root.
	UID, GID uint32
	// Store is where the passkey is kept, once checked.
	Store passkey.Store
	// Stdout is told the link, its QR code and what was enrolled; Stderr
	// gets the page's process's output, a line at a time made visible.
	// Nil discards it.
	Stdout, Stderr io.Writer
}

// Enrol is the root side of an enrolment: it listens, reads the
// certificate, draws the link, starts the page's process ("agent-sudo
// approve web serve-enrolment", which enters ServeEnrolment and drops to
// cfg.UID before it reads a byte from the network) and stores the one
// passkey that process hands back, once checked (KeepEnrolled). The split:
// docs/security.md, "Enrolment". It fails with ErrUnavailable when it could
// not listen or read the certificate, or no passkey was enrolled before
// the link expired.
func Enrol(ctx context.Context, cfg EnrolConfig) error {
	if cfg.UID == 0 {
		return errors.New("refusing to serve the enrolment page as root")
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	setup, err := NewEnrolSetup(cfg.Name, cfg.Origin, cfg.RPID, cfg.UID, cfg.GID, time.Now())
	if err != nil {
		return err
	}
	lns, err := Listen(ctx, cfg.Host, cfg.Port)
	if err != nil {
		return unavailable{enrolListenError(cfg.Host, cfg.Origin, cfg.OriginGiven, err)}
	}
	defer closeAll(lns)
	fp := ""
	if cfg.Cert != nil {
		cert, f, err := cfg.Cert()
		if err != nil {
			return unavailable{err}
		}
		if err := setup.SetCert(cert); err != nil {
			return err
		}
		fp = f
	}
	ctx, cancel := context.WithDeadline(ctx, setup.Expires)
	defer cancel()
	pageErr := termtext.NewVisibleLines(cfg.Stderr)
	page, conn, err := startEnrolPage(ctx, pageErr, lns)
	if err != nil {
		return err
	}
	kept := false
	defer func() {
		if !kept {
			cancel() // ends the page's process
		}
		// Once the passkey is kept, the page's process answers the
		// browser and ends by itself; the link's expiry bounds the wait.
		_ = page.Wait()
		_ = pageErr.Flush()
		_ = conn.Close()
	}()
	// The page is served where this process listens, which may differ
	// from Origin only by a tunnel: the phone opens Origin.
	link := cfg.Origin + setup.Path()
	// The QR code is about 21 lines: it comes after the rest and right
	// before the link and its deadline, which are printed last, so that on
	// an 80x24 terminal the whole code, the link and the deadline are on
	// the screen (what comes before scrolls up).
	out := cfg.Stdout
	if fp != "" {
		fmt.Fprintf(out, "The page's TLS certificate has the SHA-256 fingerprint\n  %s\ncheck it in the browser before you go on.\n", fp)
	}
	if !slices.Equal(cfg.SignFrom, []string{cfg.Origin}) {
		fmt.Fprintf(out, "The passkey will sign from %s (not from this link's origin).\n", strings.Join(cfg.SignFrom, ", "))
	}
	printQR(out, link)
	fmt.Fprintf(out, "Open this link on the phone within 5 minutes (until %s), once:\n  %s\n",
		setup.Expires.Local().Format("15:04:05"), link)
	en, err := KeepEnrolled(ctx, conn, setup, cfg.SignFrom, cfg.Store)
	if errors.Is(err, context.DeadlineExceeded) {
		return unavailable{errors.New("no passkey was enrolled before the link expired")}
	}
	if err != nil {
		return unavailable{err}
	}
	kept = true
	fmt.Fprintln(out, personNote(en))
	fmt.Fprintf(out, "enrolled %s: credential %x, for %s\n", en.Name, en.Credential.ID, strings.Join(en.Origins, ", "))
	return nil
}

// personNote says who the passkey en is for the two-person rule, as root's
// lookup recorded it (en.Person): getent answers "no such user" also when
// a directory (LDAP, SSSD) did not answer, and a directory user's passkey
// recorded so would count apart from her console, so the human who
// enrolled it is told, with what to do.
func personNote(en passkey.Enrolled) string {
	if uid, ok := strings.CutPrefix(en.Person, "uid "); ok {
		return fmt.Sprintf("For the two-person rule this passkey is the user %s (uid %s, as the system's name service resolves %s): "+
			"%s at a console and on this passkey count as one person.", en.Name, uid, en.Name, en.Name)
	}
	return fmt.Sprintf("%s is no user the system's name service knows (getent passwd %s found none), so for the two-person rule "+
		"this passkey is a person of its own (%s), apart from every login. If %s is a user whose directory did not answer, "+
		"revoke it (approve web revoke %s) and enrol it again once getent passwd %s finds them.",
		en.Name, en.Name, termtext.Visible(en.Person), en.Name, en.Name, en.Name)
}

// enrolListenError is ListenError's error with what to do for an
// enrolment: enrol on another port of the same host, for the web
// approver's origin, which is the origin this enrolment computed for host
// (its --web, --no-tls and --origin); with --origin, that origin's port
// moves too.
func enrolListenError(host, origin string, originGiven bool, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	advice := fmt.Sprintf("--web %s --for %s", net.JoinHostPort(host, "OTHERPORT"), origin)
	if originGiven {
		advice = fmt.Sprintf("--web %s --origin URL --for %s, where --origin is the URL that reaches OTHERPORT, not %s",
			net.JoinHostPort(host, "OTHERPORT"), origin, origin)
	}
	return fmt.Errorf("%w: enrol on another port below 1024 of the same host, for the web approver's URL, which keeps serving (%s)",
		err, advice)
}

// printQR prints link as a QR code for the phone's camera, in forced
// colours on a terminal (ColorQR); a link too long for 80 columns is said
// instead, since the link above it works as well.
func printQR(w io.Writer, link string) {
	text, err := QRText(link)
	if err != nil {
		fmt.Fprintf(w, "(no QR code: %v; paste or type the link)\n", err)
		return
	}
	if isTerminal(w) {
		text = ColorQR(text)
	}
	fmt.Fprint(w, text)
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// startEnrolPage starts this program again as "approve web
// serve-enrolment N", in a session of its own without a terminal (its
// stderr a pipe, relayed to stderr made visible), with the first of the N
// listeners lns as descriptor 3, its end of a socket pair as descriptor 4
// and the other listeners from descriptor 5 on, and no other descriptor
// of this process (spawn.MarkCloseOnExec); it returns the process and
// this side's end. ctx's end kills it.
func startEnrolPage(ctx context.Context, stderr io.Writer, lns []net.Listener) (*exec.Cmd, net.Conn, error) {
	var lfs []*os.File
	defer func() {
		for _, f := range lfs {
			_ = f.Close()
		}
	}()
	for _, ln := range lns {
		tl, ok := ln.(*net.TCPListener)
		if !ok {
			return nil, nil, fmt.Errorf("the listener on %s is not TCP", ln.Addr())
		}
		lf, err := tl.File()
		if err != nil {
			return nil, nil, fmt.Errorf("the listener's descriptor: %w", err)
		}
		lfs = append(lfs, lf)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socket pair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "enrol-root"), os.NewFile(uintptr(fds[1]), "enrol-page")
	defer theirs.Close()
	conn, err := net.FileConn(mine)
	_ = mine.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("socket pair: %w", err)
	}
	cmd := selfCommand(ctx, "approve", "web", "serve-enrolment", strconv.Itoa(len(lfs)))
	// Not the terminal itself: a pipe, whose lines this process writes
	// to it made visible, so that the page's process, which runs as
	// another user and faces the network, holds no descriptor of root's
	// terminal.
	cmd.Stderr = stderr
	cmd.ExtraFiles = append([]*os.File{lfs[0], theirs}, lfs[1:]...)
	spawn.MarkCloseOnExec()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("start the page's process: %w", err)
	}
	return cmd, conn, nil
}

// ServeEnrolment is the page's side of an enrolment ("agent-sudo approve
// web serve-enrolment N", started by Enrol and not by hand, with args its
// N): it reads the setup from descriptor 4, becomes the setup's user, then
// serves the enrolment page on the N listeners (descriptor 3, then 5 on)
// until the passkey is kept or the link expires (ErrUnavailable). Bad
// arguments or descriptors fail with ErrNotByHand.
func ServeEnrolment(ctx context.Context, args []string, log *slog.Logger) error {
	parent := os.Getppid()
	n, err := strconv.Atoi(strings.Join(args, " "))
	if err != nil || n < 1 || n > MaxAddresses {
		return notByHand{fmt.Sprintf("want the number of listeners, 1 to %d (run by approve web enroll, not by hand)", MaxAddresses)}
	}
	var lns []net.Listener
	defer func() { closeAll(lns) }()
	for i := range n {
		fd := uintptr(3)
		if i > 0 {
			fd = uintptr(4 + i)
		}
		lf := os.NewFile(fd, "listener")
		ln, err := net.FileListener(lf)
		_ = lf.Close()
		if err != nil {
			return notByHand{fmt.Sprintf("descriptor %d: %v (run by approve web enroll, not by hand)", fd, err)}
		}
		lns = append(lns, ln)
	}
	cf := os.NewFile(4, "enrol-root")
	conn, err := net.FileConn(cf)
	_ = cf.Close()
	if err != nil {
		return notByHand{fmt.Sprintf("descriptor 4: %v (run by approve web enroll, not by hand)", err)}
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	setup, err := ReadEnrolSetup(br)
	if err != nil {
		return err
	}
	if setup.UID == 0 {
		return errors.New("refusing to serve as root")
	}
	if err := DropPrivileges(setup.UID, setup.GID); err != nil {
		return err
	}
	// The change of uid cleared the Pdeathsig Enrol started it with.
	if err := ArmParentDeath(parent); err != nil {
		return err
	}
	for i, ln := range lns {
		tl, err := setup.Listener(ln)
		if err != nil {
			return err
		}
		lns[i] = tl
	}
	e := setup.Enrolment(conn, br)
	e.Log = log
	if err := e.Start(time.Now()); err != nil {
		return err
	}
	ctx, cancel := context.WithDeadline(ctx, setup.Expires)
	defer cancel()
	httpErr := make(chan error, 1)
	go func() { httpErr <- ServeHTTP(ctx, lns, e.Handler()) }()
	err = e.Wait(ctx)
	cancel()
	<-httpErr
	if err != nil {
		return unavailable{errors.New("the link expired")}
	}
	return nil
}
