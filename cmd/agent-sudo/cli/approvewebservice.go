package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"

	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/web"
)

// DefaultWebSettings is the settings file of the web approver's service
// (packaging/systemd/agent-sudo-web.service runs "approve web serve").
const DefaultWebSettings = "/etc/agent-sudo/web.toml"

// maxWebSettings bounds the settings file read.
const maxWebSettings = 64 << 10

// webSettings is the settings file of "approve web serve": the flags of
// "approve --web", one key each. A key left out takes the flag's default.
type webSettings struct {
	Listen          string   `toml:"listen"`
	Origin          string   `toml:"origin"`
	NoTLS           bool     `toml:"no_tls"`
	TLSDir          string   `toml:"tls_dir"`
	TLSCert         string   `toml:"tls_cert"`
	TLSKey          string   `toml:"tls_key"`
	User            string   `toml:"user"`
	ApproverSockets []string `toml:"approver_sockets"`
	SSH             []string `toml:"ssh"`
	SSHOptions      []string `toml:"ssh_options"`
}

// webSettingsKeys are the keys webSettings knows, for "did you mean".
var webSettingsKeys = []string{"listen", "origin", "no_tls", "tls_dir", "tls_cert", "tls_key", "user",
	"approver_sockets", "ssh", "ssh_options"}

// readWebSettings reads and checks the settings file at path: a regular
// file of root's that neither group nor others may write (it says where
// the web approver listens and which daemons it serves, as root), every
// key known, every value as its flag would take it. Each error names the
// file, and the key where one is at fault.
func readWebSettings(path string) (*approveOpts, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: not a regular file", path)
	case !ok || st.Uid != 0:
		return nil, fmt.Errorf("%s: owned by uid %d, want root's (chown root:root %s)", path, fileUID(st), path)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, fmt.Errorf("%s: mode %04o lets group or others write it, want 0644 or 0640 (chmod 644 %s)", path, fi.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxWebSettings+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxWebSettings {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxWebSettings)
	}
	return parseWebSettings(path, string(b))
}

func fileUID(st *syscall.Stat_t) int64 {
	if st == nil {
		return -1
	}
	return int64(st.Uid)
}

// parseWebSettings parses the settings text of the file named path into
// the options of "approve --web", refusing an unknown key or a value its
// flag would refuse.
func parseWebSettings(path, text string) (*approveOpts, error) {
	var s webSettings
	md, err := toml.Decode(text, &s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The decoder matches a key to a field without regard to case, so
	// "LISTEN" would be taken as listen, and listen and Listen both given
	// would leave one of them silently unread: keys are refused unless
	// spelt exactly, as the daemon's configuration refuses them.
	var miscased []string
	for _, k := range md.Keys() {
		if len(k) != 1 || slices.Contains(webSettingsKeys, k[0]) {
			continue
		}
		for _, want := range webSettingsKeys {
			if strings.EqualFold(k[0], want) {
				miscased = append(miscased, fmt.Sprintf("key %q must be written %q: keys are case-sensitive", k[0], want))
			}
		}
	}
	if len(miscased) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(miscased, "; "))
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		var msgs []string
		for _, k := range undecoded {
			msg := fmt.Sprintf("unknown key %q", k.String())
			if near := config.NearestKey(k.String(), webSettingsKeys); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			msgs = append(msgs, msg)
		}
		sort.Strings(msgs)
		return nil, fmt.Errorf("%s: %s; the keys are %s", path, strings.Join(msgs, ", "), strings.Join(webSettingsKeys, ", "))
	}
	// listen, tls_dir and user given as "" are not keys left out: their
	// flags refuse "" (or do not serve at all), and taking the default in
	// silence would hide the mistake. (origin, tls_cert and tls_key are ""
	// by default: "" is their default.)
	var empty []string
	for key, v := range map[string]string{"listen": s.Listen, "tls_dir": s.TLSDir, "user": s.User} {
		if v == "" && md.IsDefined(key) {
			empty = append(empty, key)
		}
	}
	if len(empty) > 0 {
		sort.Strings(empty)
		return nil, fmt.Errorf("%s: %s: empty; leave the key out to take its default, or give a value", path, strings.Join(empty, ", "))
	}
	o := &approveOpts{defaultSocket: defaultApproverSocket, sshProgram: "ssh"}
	o.web = webOpts{addr: s.Listen, origin: s.Origin, noTLS: s.NoTLS, tlsDir: s.TLSDir, tlsCert: s.TLSCert, tlsKey: s.TLSKey,
		passkeys: passkey.DefaultDir, user: s.User}
	if o.web.addr == "" {
		o.web.addr = defaultWebAddr
	}
	if o.web.tlsDir == "" {
		o.web.tlsDir = web.DefaultTLSDir
	}
	if o.web.user == "" {
		o.web.user = web.DefaultUser
	}
	bad := func(key string, err error) error { return fmt.Errorf("%s: %s: %w", path, key, err) }
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return nil, bad("tls_cert", errors.New("give tls_cert and tls_key together, or neither (a certificate generated in tls_dir)"))
	}
	if s.NoTLS && s.TLSCert != "" {
		return nil, bad("no_tls", errors.New("no_tls = true with tls_cert: choose one"))
	}
	for key, p := range map[string]string{"tls_dir": s.TLSDir, "tls_cert": s.TLSCert, "tls_key": s.TLSKey} {
		if p != "" && !filepath.IsAbs(p) {
			return nil, bad(key, fmt.Errorf("%q is not an absolute path", p))
		}
	}
	for _, p := range s.ApproverSockets {
		if !filepath.IsAbs(p) {
			return nil, bad("approver_sockets", fmt.Errorf("%q is not an absolute path", p))
		}
		o.sockets = append(o.sockets, p)
	}
	for _, d := range s.SSH {
		if err := checkSSHDestination(d); err != nil {
			return nil, bad("ssh", err)
		}
		o.ssh = append(o.ssh, d)
	}
	for _, opt := range s.SSHOptions {
		if opt == "" || strings.ContainsAny(opt, "\n\r\x00") {
			return nil, bad("ssh_options", errors.New("an ssh option must be one non-empty line"))
		}
		o.sshOptions = append(o.sshOptions, opt)
	}
	listen, _, _, err := o.web.endpoints()
	if err == nil {
		err = checkPort(listen)
	}
	if err != nil {
		// endpoints and checkPort name the flags --web and --origin.
		msg := strings.NewReplacer("--web ", "listen = ", "--no-tls with --web ", "no_tls = true with listen = ", "--origin ", "origin = ").Replace(err.Error())
		return nil, fmt.Errorf("%s: %s", path, msg)
	}
	return o, nil
}

// approveWebServe is "approve web serve [--config FILE]": the web
// approver with its settings from FILE (DefaultWebSettings), as
// agent-sudo-web.service runs it. A file it refuses exits 78 (EX_CONFIG),
// which the unit does not restart on.
func approveWebServe(ctx context.Context, inv *invocation, args []string, deps approveDeps) int {
	path := DefaultWebSettings
	switch {
	case len(args) == 0:
	case len(args) == 2 && args[0] == "--config" && args[1] != "":
		path = args[1]
	case len(args) == 1 && strings.HasPrefix(args[0], "--config=") && len(args[0]) > len("--config="):
		path = strings.TrimPrefix(args[0], "--config=")
	default:
		return inv.fail(exitUsage, "approve web serve: want no argument or --config FILE; see 'agent-sudo help approve web'")
	}
	opts, err := readWebSettings(path)
	if err != nil {
		return inv.fail(exitConfig, "approve web serve: %v", err)
	}
	return approveWebMain(ctx, inv, opts, deps)
}
