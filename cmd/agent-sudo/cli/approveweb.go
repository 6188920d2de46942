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
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/spawn"
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
	// forOrigins (enroll --for) are the origins the passkey will sign
	// from, when they are not the enrolment page's.
	forOrigins []string
}

func (o *webOpts) addFlags(fset *flag.FlagSet, addrDefault string) {
	fset.StringVar(&o.addr, "web", addrDefault, "serve the web approver on `host:port`: on every address of host (loopback unless you say otherwise), on a port below 1024, which only root may take (docs/remote.md)")
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
	u, err := web.ParseOrigin(origin)
	if err != nil {
		return "", "", "", fmt.Errorf("--%w", err)
	}
	origin = web.Origin(u)
	rpID = strings.ToLower(u.Hostname())
	if net.ParseIP(rpID) != nil {
		return "", "", "", fmt.Errorf("the origin %s is an IP address: passkeys need a host name (localhost, a DNS or Tailscale name; docs/remote.md)", origin)
	}
	return net.JoinHostPort(host, port), origin, rpID, nil
}

// checkPort refuses --web's port unless only root may listen on it
// (web.CheckPort): the web approver's and the enrolment's address must be
// one no local user can take, for as long as passkeys may be used at it.
func checkPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--web %q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("--web %q: the port is not a number", addr)
	}
	if err := web.CheckPort(uint16(p), web.UnprivilegedPortStartFile); err != nil {
		return fmt.Errorf("--web %s: %w", addr, err)
	}
	return nil
}

// cert returns the TLS certificate and its fingerprint: --tls-cert's, or
// the one generated for rpID in --tls-dir.
func (o *webOpts) cert(rpID string) (tls.Certificate, string, error) {
	if o.tlsCert != "" || o.tlsKey != "" {
		return web.LoadCert(o.tlsCert, o.tlsKey)
	}
	return web.LoadOrCreateCert(o.tlsDir, rpID)
}

// webLog is the web processes' log, on stderr, every string escaped.
func webLog(inv *invocation) *slog.Logger {
	return slog.New(slog.NewTextHandler(inv.stderr, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() == slog.KindString {
			a.Value = slog.StringValue(visible(a.Value.String()))
		}
		return a
	}}))
}

// approveWebMain is "agent-sudo approve --web ADDR": the web approver.
// It connects to every daemon named as root (starting the ssh commands as
// root), makes each channel signed-only, then hands them to web.Serve,
// which opens its listener and certificate, becomes --user and only then
// serves pages. It cannot
// connect again once it is --user: a daemon whose channel ends shows as
// disconnected until the web approver is restarted, and it exits when no
// daemon is left (docs/approving.md#several-daemons). The passkeys' public
// keys come from the daemons, on their channels.
func approveWebMain(ctx context.Context, inv *invocation, opts *approveOpts, deps approveDeps) int {
	o := &opts.web
	listenAddr, origin, rpID, err := o.endpoints()
	if err == nil {
		err = checkPort(listenAddr)
	}
	if err != nil {
		return inv.fail(exitUsage, "approve --web: %v", err)
	}
	if deps.geteuid() != 0 {
		return inv.fail(exitDenied, "approve --web must start as root (it connects to the approver socket, then runs as %s)", o.user)
	}
	// What it was started with beyond 0-2 is not its own to keep once it
	// faces the network as --user, nor its children's (ssh, the relay).
	if err := spawn.CloseInherited(); err != nil {
		return inv.fail(exitSoftware, "approve --web: %v", err)
	}
	if o.passkeys != passkey.DefaultDir {
		return inv.fail(exitUsage, "approve --web: --passkeys is for approve web enroll, list and revoke; the web approver gets the passkeys' public keys from each daemon")
	}
	uid, gid, err := webUser(o.user)
	if err != nil {
		return inv.fail(exitUsage, "approve --web: %v", err)
	}
	var daemons []web.Daemon
	up := 0
	// signed_only tells each daemon the host the web approver runs on, by
	// which it records its decisions ("" when it cannot be read).
	host, _ := os.Hostname()
	for _, d := range opts.daemons(deps) {
		wd := web.Daemon{Name: d.Name}
		conn, err := d.Dial(ctx)
		if err == nil {
			defer conn.Close()
			c := approval.NewClient(conn)
			if err = c.Send(approval.Message{Type: approval.MsgSignedOnly, DaemonHost: host}); err == nil {
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
	host, port, err := net.SplitHostPort(listenAddr)
	var p uint64
	if err == nil {
		p, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return inv.fail(exitUsage, "approve --web: --web %q: %v", listenAddr, err)
	}
	names := make([]string, len(daemons))
	for i, d := range daemons {
		names[i] = visible(d.Name)
	}
	cfg := web.ServeConfig{Daemons: daemons, Host: host, Port: uint16(p), Origin: origin, RPID: rpID, UID: uid, GID: gid,
		BeforeDrop: func() error { return web.RelayTerminalOutput(uid, gid) },
		Log:        webLog(inv),
		Ready: func(fp string) {
			fmt.Fprintf(inv.stdout, "web approver for %s at %s (running as %s)\n", strings.Join(names, ", "), origin, o.user)
			if fp != "" {
				fmt.Fprintf(inv.stdout, "TLS certificate SHA-256 fingerprint: %s\n", fp)
			}
		}}
	if !o.noTLS {
		cfg.Cert = func() (tls.Certificate, string, error) { return o.cert(rpID) }
	}
	err = web.Serve(ctx, cfg)
	switch {
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return inv.fail(exitInterrupted, "approve --web: interrupted")
	case errors.Is(err, web.ErrNoDaemonLeft):
		return inv.fail(exitUnavailable, "approve --web: %v", err)
	case errors.Is(err, web.ErrUnavailable):
		return inv.fail(exitUnavailable, "approve --web: %v", err)
	}
	return inv.fail(exitSoftware, "approve --web: %v", err)
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

// approveWebVerb returns the run function of "approve web VERB" in the
// command table ("approve web" itself when verb is ""); "agent-sudo approve
// web ..." reaches approveWebCommand through approve, not through it.
func approveWebVerb(verb string) func(context.Context, *invocation, []string) int {
	return func(ctx context.Context, inv *invocation, args []string) int {
		if verb != "" {
			args = append([]string{verb}, args...)
		}
		return approveWebCommand(ctx, inv, args, realApproveDeps())
	}
}

// approveWebCommand is "agent-sudo approve web enroll|list|revoke".
func approveWebCommand(ctx context.Context, inv *invocation, args []string, deps approveDeps) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		return inv.showHelp(approveWebHelp)
	}
	if args[0] == "relay-output" { // drops to --user itself
		return approveWebRelayOutput(inv, args[1:])
	}
	if args[0] == "serve" { // approve --web's own checks, root first
		return approveWebServe(ctx, inv, args[1:], deps)
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
	case "serve-enrolment":
		return approveWebServeEnrolment(ctx, inv, args[1:])
	}
	return inv.fail(exitUsage, "approve web: unknown subcommand %q: want enroll, list, revoke or serve", visible(args[0]))
}

func approveWebUsage() *usage {
	return &usage{
		name: "approve web",
		synopsis: []string{
			"sudo agent-sudo approve web enroll NAME [--web HOST:PORT] [--origin URL] [--for URL]... [--no-tls] [--passkeys DIR] [--user USER]",
			"sudo agent-sudo approve web list [--passkeys DIR]",
			"sudo agent-sudo approve web revoke NAME [--passkeys DIR]",
			"sudo agent-sudo approve web serve [--config FILE]",
		},
		text: `Manage the passkeys of the web approver (agent-sudo approve --web). Run at
the root terminal.

enroll NAME serves a one-time link for 5 minutes on --web (or --origin,
the URL the phone opens). The passkey signs only from the origins --for
names: the web approver's URL, on the same host name as the link; by
default the link's own origin. So while the web approver runs on
HOST:844, enrol on another port of HOST with --for https://HOST:844; no
restart is needed, the web approver learns of the new passkey from the
daemon. It prints the link, also as a QR code, with the TLS
certificate's fingerprint. The page
is served as --user (default agent-sudo-web); only the checked public key comes
back to root. Open the link on the phone (or scan the code), and the phone
registers a passkey (user verification required) for the approver NAME;
the public key is stored in --passkeys, root only.
list shows the enrolled passkeys; revoke NAME removes one (kept under
revoked/ so that audit verify still checks what it signed).
serve is the web approver (approve --web) with its settings read from
--config FILE (default /etc/agent-sudo/web.toml, root's, 0644 or 0640),
as agent-sudo-web.service runs it; a file it refuses exits 78.
See docs/approving.md.
`,
		exits: []exitDoc{
			{"0", "done"},
			{"2", "usage error"},
			{"69", "the link expired before a passkey was enrolled"},
			{"77", "not run as root"},
			{"78", "the passkeys directory is not root's alone; serve: the settings file is refused"},
		},
		args: true, interspersed: true,
	}
}

func approveWebHelp(inv *invocation, w io.Writer) error {
	fset := approveWebUsage().newFlagSet()
	o := &webOpts{}
	o.addFlags(fset, defaultWebAddr)
	o.addEnrolFlags(fset)
	return approveWebUsage().write(w, fset)
}

// defaultWebAddr is enroll's --web: loopback, on a port only root may
// listen on (web.CheckPort).
const defaultWebAddr = "localhost:844"

// addEnrolFlags adds the flags of enroll alone.
func (o *webOpts) addEnrolFlags(fset *flag.FlagSet) {
	fset.StringVar(&o.user, "user", web.DefaultUser, "the `user` the enrolment page is served as (never root; a user no other program runs as)")
	fset.Func("for", "the web approver's `URL` (scheme://host[:port], on the link's host name) the passkey will sign from, "+
		"when the link is served elsewhere (another port while the web approver runs); repeat it for several", func(v string) error {
		o.forOrigins = append(o.forOrigins, v)
		return nil
	})
}

// parseWeb parses the flags of "approve web VERB" and, when named, its one
// NAME, checked as passkey.CheckName does; code is the exit status when ok
// is false.
func parseWeb(inv *invocation, verb string, args []string, named bool) (o *webOpts, name string, code int, ok bool) {
	u := approveWebUsage()
	fset := u.newFlagSet()
	o = &webOpts{}
	o.addFlags(fset, defaultWebAddr)
	if verb == "enroll" {
		o.addEnrolFlags(fset)
	}
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

// approveWebEnroll is "approve web enroll NAME": it checks its flags and
// the passkeys directory, then web.Enrol serves the link and keeps the
// passkey.
func approveWebEnroll(ctx context.Context, inv *invocation, args []string) int {
	o, name, code, ok := parseWeb(inv, "enroll", args, true)
	if !ok {
		return code
	}
	listenAddr, origin, rpID, err := o.endpoints()
	if err == nil {
		err = checkPort(listenAddr)
	}
	if err != nil {
		return inv.fail(exitUsage, "approve web enroll: %v", err)
	}
	uid, gid, err := webUser(o.user)
	if err != nil {
		return inv.fail(exitUsage, "approve web enroll: %v", err)
	}
	store := passkey.Store{Dir: o.passkeys}
	if _, err := store.List(false); err != nil {
		return inv.fail(exitConfig, "approve web enroll: %v", err)
	}
	signFrom, err := web.EnrolOrigins(rpID, origin, o.forOrigins)
	if err != nil {
		return inv.fail(exitUsage, "approve web enroll: --for: %v", err)
	}
	host, port, err := net.SplitHostPort(listenAddr)
	var p uint64
	if err == nil {
		p, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return inv.fail(exitUsage, "approve web enroll: --web %q: %v", listenAddr, err)
	}
	cfg := web.EnrolConfig{Name: name, Host: host, Port: uint16(p), Origin: origin, OriginGiven: o.origin != "", RPID: rpID,
		SignFrom: signFrom, UID: uid, GID: gid, Store: store, Stdout: inv.stdout, Stderr: inv.stderr}
	if !o.noTLS {
		cfg.Cert = func() (tls.Certificate, string, error) { return o.cert(rpID) }
	}
	switch err := web.Enrol(ctx, cfg); {
	case err == nil:
		return 0
	case errors.Is(err, web.ErrUnavailable):
		return inv.fail(exitUnavailable, "approve web enroll: %v", err)
	default:
		return inv.fail(exitSoftware, "approve web enroll: %v", err)
	}
}

// webUser returns the ids of --user, which must not be root. A user that
// does not exist is named, with how to create it as the error's hint.
func webUser(name string) (uid, gid uint32, err error) {
	uid, err = account.UID(name)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		how := "the package creates it (/usr/lib/sysusers.d/agent-sudo.conf; systemd-sysusers agent-sudo.conf)"
		if name != web.DefaultUser {
			how = "name an existing user"
		}
		return 0, 0, hint.New(fmt.Sprintf("--user %s: no such user", visible(name)),
			how+"; or create it as root: useradd --system --user-group --no-create-home --home-dir / --shell /usr/sbin/nologin "+
				visible(name)+" (a user of its own: a process of the same uid could stop, trace or kill the web approver)")
	}
	if err == nil {
		gid, err = userGID(name)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("--user %q: %w", name, err)
	}
	if uid == 0 {
		return 0, 0, fmt.Errorf("--user must not be root: pages are served only after root is dropped")
	}
	return uid, gid, nil
}

// approveWebServeEnrolment is "approve web serve-enrolment N", the page's
// side of an enrolment, started by web.Enrol and not by hand:
// web.ServeEnrolment.
func approveWebServeEnrolment(ctx context.Context, inv *invocation, args []string) int {
	switch err := web.ServeEnrolment(ctx, args, webLog(inv)); {
	case err == nil:
		return 0
	case errors.Is(err, web.ErrNotByHand):
		return inv.fail(exitUsage, "approve web serve-enrolment: %v", err)
	case errors.Is(err, web.ErrUnavailable):
		return inv.fail(exitUnavailable, "approve web serve-enrolment: %v", err)
	default:
		return inv.fail(exitSoftware, "approve web serve-enrolment: %v", err)
	}
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
