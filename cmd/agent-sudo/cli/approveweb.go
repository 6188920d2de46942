package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/web"
)

// webOpts are the flags the web approver and the enrolment share.
type webOpts struct {
	addr     string
	origin   string
	tlsDir   string
	tlsCert  string
	tlsKey   string
	noTLS    bool
	passkeys string
	user     string
}

func (o *webOpts) addFlags(fset *flag.FlagSet, addrDefault string) {
	fset.StringVar(&o.addr, "web", addrDefault, "serve the web approver on `host:port` (loopback unless you say otherwise; see docs/remote.md)")
	fset.StringVar(&o.origin, "origin", "", "the `URL` the phone's browser opens (scheme://host[:port]), when it differs from --web's (a tunnel, a proxy)")
	fset.StringVar(&o.tlsDir, "tls-dir", web.DefaultTLSDir, "`dir` of the TLS certificate generated at first use (cert.pem, key.pem)")
	fset.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate `file` to use instead of the generated one (with --tls-key)")
	fset.StringVar(&o.tlsKey, "tls-key", "", "TLS key `file` of --tls-cert")
	fset.BoolVar(&o.noTLS, "no-tls", false, "plain HTTP; refused unless --web is a loopback address (an ssh tunnel, the browser tests)")
	fset.StringVar(&o.passkeys, "passkeys", passkey.DefaultDir, "`dir` of the enrolled passkeys (the daemon's passkeys key)")
}

// endpoints works out where to listen and the origin the browser sees.
func (o *webOpts) endpoints() (listen, origin, rpID string, err error) {
	host, port, err := net.SplitHostPort(o.addr)
	if err != nil {
		return "", "", "", fmt.Errorf("--web %q: %w", o.addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", "", "", fmt.Errorf("--web %q: the port is not a number", o.addr)
	}
	scheme := "https"
	if o.noTLS {
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return "", "", "", fmt.Errorf("--no-tls with --web %q: plain HTTP only on a loopback address", o.addr)
		}
		scheme = "http"
	}
	origin = o.origin
	if origin == "" {
		origin = scheme + "://" + net.JoinHostPort(host, port)
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" && u.Path != "/" {
		return "", "", "", fmt.Errorf("--origin %q: want scheme://host[:port]", origin)
	}
	origin = u.Scheme + "://" + u.Host
	rpID = u.Hostname()
	if net.ParseIP(rpID) != nil {
		return "", "", "", fmt.Errorf("the origin %s is an IP address: passkeys need a host name (localhost, a DNS or Tailscale name; docs/remote.md)", origin)
	}
	return net.JoinHostPort(host, port), origin, rpID, nil
}

// listen opens the listener, with TLS unless --no-tls, and returns the
// certificate's fingerprint ("" without TLS).
func (o *webOpts) listen(ctx context.Context, addr, rpID string) (net.Listener, string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	if o.noTLS {
		return ln, "", nil
	}
	var cert tls.Certificate
	var fp string
	if o.tlsCert != "" || o.tlsKey != "" {
		cert, fp, err = web.LoadCert(o.tlsCert, o.tlsKey)
	} else {
		cert, fp, err = web.LoadOrCreateCert(o.tlsDir, rpID)
	}
	if err != nil {
		_ = ln.Close()
		return nil, "", err
	}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), fp, nil
}

// serveHTTP serves h on ln until ctx ends.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10,
		ErrorLog: nil}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return ctx.Err()
	case err := <-errc:
		return err
	}
}

// approveWebMain is "agent-sudo approve --web ADDR": the web approver.
// It connects to every daemon named as root (starting the ssh commands as
// root), makes each channel signed-only, opens its listener and
// certificate, then becomes --user and only then serves pages. It cannot
// connect again once it is --user: a daemon whose channel ends shows as
// disconnected until the web approver is restarted, and it exits when no
// daemon is left (docs/approving.md#several-daemons). The passkeys' public
// keys come from the daemons, on their channels.
func approveWebMain(ctx context.Context, inv *invocation, opts *approveOpts, deps approveDeps) int {
	o := &opts.web
	listenAddr, origin, rpID, err := o.endpoints()
	if err != nil {
		return inv.fail(exitUsage, "approve --web: %v", err)
	}
	if deps.geteuid() != 0 {
		return inv.fail(exitDenied, "approve --web must start as root (it connects to the approver socket, then runs as %s)", o.user)
	}
	if o.passkeys != passkey.DefaultDir {
		return inv.fail(exitUsage, "approve --web: --passkeys is for approve web enroll, list and revoke; the web approver gets the passkeys' public keys from each daemon")
	}
	uid, err := account.UID(o.user)
	if err != nil {
		return inv.fail(exitUsage, "approve --web: --user %q: %v", o.user, err)
	}
	gid, err := userGID(o.user)
	if err != nil {
		return inv.fail(exitUsage, "approve --web: --user %q: %v", o.user, err)
	}
	if uid == 0 {
		return inv.fail(exitUsage, "approve --web: --user must not be root: the web approver drops root before it serves a page")
	}
	var daemons []web.Daemon
	up := 0
	for _, d := range opts.daemons(deps) {
		wd := web.Daemon{Name: d.Name}
		conn, err := d.Dial(ctx)
		if err == nil {
			defer conn.Close()
			c := approval.NewClient(conn)
			if err = c.Send(approval.Message{Type: approval.MsgSignedOnly}); err == nil {
				wd.Client = c
				up++
			}
		}
		if err != nil {
			wd.Err = err
			inv.say("approve --web: %s: %v; is the daemon running? (systemctl status agent-sudo)", visible(d.Name), err)
		}
		daemons = append(daemons, wd)
	}
	if up == 0 {
		return inv.fail(exitUnavailable, "approve --web: no daemon could be reached")
	}
	ln, fp, err := o.listen(ctx, listenAddr, rpID)
	if err != nil {
		return inv.fail(exitUnavailable, "approve --web: %v", err)
	}
	defer ln.Close()
	if err := web.DropPrivileges(uid, gid); err != nil {
		return inv.fail(exitSoftware, "approve --web: %v", err)
	}
	log := slog.New(slog.NewTextHandler(inv.stderr, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() == slog.KindString {
			a.Value = slog.StringValue(visible(a.Value.String()))
		}
		return a
	}}))
	srv, err := web.New(web.Config{Daemons: daemons, Origin: origin, RPID: rpID, Log: log})
	if err != nil {
		return inv.fail(exitSoftware, "approve --web: %v", err)
	}
	names := make([]string, len(daemons))
	for i, d := range daemons {
		names[i] = visible(d.Name)
	}
	fmt.Fprintf(inv.stdout, "web approver for %s at %s (running as %s)\n", strings.Join(names, ", "), origin, o.user)
	if fp != "" {
		fmt.Fprintf(inv.stdout, "TLS certificate SHA-256 fingerprint: %s\n", fp)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feedErr := make(chan error, 1)
	go func() { feedErr <- srv.Run(ctx) }()
	httpErr := make(chan error, 1)
	go func() { httpErr <- serveHTTP(ctx, ln, srv.Handler()) }()
	select {
	case err = <-feedErr:
		cancel()
		<-httpErr
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return inv.fail(exitInterrupted, "approve --web: interrupted")
		}
		return inv.fail(exitUnavailable, "approve --web: lost every agent-sudod: %v", err)
	case err = <-httpErr:
		cancel()
		<-feedErr
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return inv.fail(exitInterrupted, "approve --web: interrupted")
		}
		return inv.fail(exitSoftware, "approve --web: %v", err)
	}
}

// userGID returns the primary group of the user name.
func userGID(name string) (uint32, error) {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Split(strings.TrimSpace(line), ":")
		if len(f) >= 4 && f[0] == name {
			return account.ParseID(f[3])
		}
	}
	return 0, fmt.Errorf("no such user in /etc/passwd")
}

// approveWebCommand is "agent-sudo approve web enroll|list|revoke".
func approveWebCommand(ctx context.Context, inv *invocation, args []string, deps approveDeps) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		return inv.showHelp(approveWebHelp)
	}
	if deps.geteuid() != 0 {
		return inv.fail(exitDenied, "approve web %s must run as root: the passkeys are root's", args[0])
	}
	switch args[0] {
	case "enroll":
		return approveWebEnroll(ctx, inv, args[1:])
	case "list":
		return approveWebList(inv, args[1:])
	case "revoke":
		return approveWebRevoke(inv, args[1:])
	}
	return inv.fail(exitUsage, "approve web: unknown subcommand %q: want enroll, list or revoke", args[0])
}

func approveWebUsage() *usage {
	return &usage{
		name: "approve web",
		synopsis: []string{
			"sudo agent-sudo approve web enroll NAME [--web HOST:PORT] [--origin URL] [--no-tls] [--passkeys DIR]",
			"sudo agent-sudo approve web list [--passkeys DIR]",
			"sudo agent-sudo approve web revoke NAME [--passkeys DIR]",
		},
		text: `Manage the passkeys of the web approver (agent-sudo approve --web). Run at
the root terminal.

enroll NAME serves a one-time link for 5 minutes on --web (stop the web
approver first if it uses that address, or give another port with the same
host name) and prints it, also as a QR code, with the TLS certificate's
fingerprint. Open it on the phone (or scan the code), and the phone registers a passkey (user verification required)
for the approver NAME; the public key is stored in --passkeys, root only.
list shows the enrolled passkeys; revoke NAME removes one (kept under
revoked/ so that audit verify still checks what it signed).
See docs/approving.md.
`,
		exits: []exitDoc{
			{"0", "done"},
			{"2", "usage error"},
			{"69", "the link expired before a passkey was enrolled"},
			{"77", "not run as root"},
			{"78", "the passkeys directory is not root's alone"},
		},
		args: true, interspersed: true,
	}
}

func approveWebHelp(inv *invocation, w io.Writer) error {
	fset := approveWebUsage().newFlagSet()
	(&webOpts{}).addFlags(fset, "localhost:8443")
	return approveWebUsage().write(w, fset)
}

// parseWeb parses the flags of "approve web VERB" and, when named, its one
// NAME, checked as passkey.CheckName does; code is the exit status when ok
// is false.
func parseWeb(inv *invocation, verb string, args []string, named bool) (o *webOpts, name string, code int, ok bool) {
	u := approveWebUsage()
	fset := u.newFlagSet()
	o = &webOpts{}
	o.addFlags(fset, "localhost:8443")
	rest, code, ok := inv.parse(u, fset, args)
	if !ok {
		return nil, "", code, false
	}
	switch {
	case !named && len(rest) > 0:
		return nil, "", inv.fail(exitUsage, "approve web %s: unexpected argument %s", verb, visible(rest[0])), false
	case !named:
		return o, "", 0, true
	case len(rest) != 1:
		return nil, "", inv.fail(exitUsage, "approve web %s: give one NAME", verb), false
	}
	if err := passkey.CheckName(rest[0]); err != nil {
		return nil, "", inv.fail(exitUsage, "approve web %s: %v", verb, err), false
	}
	return o, rest[0], 0, true
}

func approveWebEnroll(ctx context.Context, inv *invocation, args []string) int {
	o, name, code, ok := parseWeb(inv, "enroll", args, true)
	if !ok {
		return code
	}
	listenAddr, origin, rpID, err := o.endpoints()
	if err != nil {
		return inv.fail(exitUsage, "approve web enroll: %v", err)
	}
	ln, fp, err := o.listen(ctx, listenAddr, rpID)
	if err != nil {
		return inv.fail(exitUnavailable, "approve web enroll: %v", err)
	}
	defer ln.Close()
	// The page is served where this process listens, which may differ
	// from --origin only by a tunnel: the phone opens --origin.
	e := &web.Enrolment{Name: name, PageOrigin: origin, RPID: rpID, Origins: []string{origin}, Store: passkey.Store{Dir: o.passkeys}}
	if err := e.Start(time.Now()); err != nil {
		return inv.fail(exitSoftware, "approve web enroll: %v", err)
	}
	link := origin + e.Path()
	fmt.Fprintf(inv.stdout, "Open this link on the phone within 5 minutes (until %s), once:\n\n  %s\n\n",
		e.Expires().Local().Format("15:04:05"), link)
	printQR(inv, link)
	if fp != "" {
		fmt.Fprintf(inv.stdout, "The page's TLS certificate has the SHA-256 fingerprint\n  %s\ncheck it in the browser before you go on.\n", fp)
	}
	ctx, cancel := context.WithDeadline(ctx, e.Expires())
	defer cancel()
	httpErr := make(chan error, 1)
	go func() { httpErr <- serveHTTP(ctx, ln, e.Handler()) }()
	en, err := e.Wait(ctx)
	cancel()
	<-httpErr
	if err != nil {
		return inv.fail(exitUnavailable, "approve web enroll: no passkey was enrolled before the link expired")
	}
	fmt.Fprintf(inv.stdout, "enrolled %s: credential %x, for %s\n", en.Name, en.Credential.ID, strings.Join(en.Origins, ", "))
	return 0
}

// printQR prints link as a QR code for the phone's camera, in forced
// colours on a terminal (web.ColorQR); a link too long for 80 columns is
// said instead, since the link above it works as well.
func printQR(inv *invocation, link string) {
	text, err := web.QRText(link)
	if err != nil {
		fmt.Fprintf(inv.stdout, "(no QR code: %v; paste or type the link)\n\n", err)
		return
	}
	if isTerminalWriter(inv.stdout) {
		text = web.ColorQR(text)
	}
	fmt.Fprintf(inv.stdout, "%s\n", text)
}

func approveWebList(inv *invocation, args []string) int {
	o, _, code, ok := parseWeb(inv, "list", args, false)
	if !ok {
		return code
	}
	keys, err := passkey.Store{Dir: o.passkeys}.List(true)
	if err != nil {
		return inv.fail(exitConfig, "approve web list: %v", err)
	}
	for _, k := range keys {
		state := "valid"
		if !k.Revoked.IsZero() {
			state = "revoked " + k.Revoked.Format(time.RFC3339)
		}
		fmt.Fprintf(inv.stdout, "%s\t%s\tcredential %x\tenrolled %s\t%s\n", k.Name, state, k.Credential.ID,
			k.Created.Format(time.RFC3339), visible(strings.Join(k.Origins, ",")))
	}
	return 0
}

func approveWebRevoke(inv *invocation, args []string) int {
	o, name, code, ok := parseWeb(inv, "revoke", args, true)
	if !ok {
		return code
	}
	if err := (passkey.Store{Dir: o.passkeys}).Revoke(name, time.Now()); err != nil {
		return inv.fail(exitConfig, "approve web revoke: %v", err)
	}
	fmt.Fprintf(inv.stdout, "revoked %s: the daemon refuses its signatures from now on\n", name)
	return 0
}
