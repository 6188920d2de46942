package cli

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/internal/web"
)

// TestWebSettingsParse: the web approver's settings file (web.toml, as
// agent-sudo-web.service reads it) takes the flags of approve --web, one
// key each; an unknown key, a value the flag would refuse, or a port any
// user could take is refused with the file and the key named.
func TestWebSettingsParse(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       string // the error's text after "web.toml: "; "" when it is taken
		check      func(*testing.T, *approveOpts)
	}{
		{name: "empty: the defaults", text: "", check: func(t *testing.T, o *approveOpts) {
			if o.web.addr != "localhost:844" || o.web.user != web.DefaultUser || o.web.tlsDir != web.DefaultTLSDir || o.web.noTLS ||
				len(o.sockets) != 0 || o.defaultSocket != defaultApproverSocket {
				t.Errorf("defaults: %+v", o)
			}
		}},
		{name: "every key", text: `listen = "localhost:843"
origin = "http://localhost:8443"
no_tls = true
tls_dir = "/etc/agent-sudo/web"
user = "nobody"
approver_sockets = ["/run/a.sock", "/run/b.sock"]
ssh = ["root@build-02"]
ssh_options = ["Port=2222"]
`, check: func(t *testing.T, o *approveOpts) {
			if o.web.addr != "localhost:843" || o.web.origin != "http://localhost:8443" || !o.web.noTLS || o.web.user != "nobody" ||
				!slices.Equal(o.sockets, []string{"/run/a.sock", "/run/b.sock"}) || !slices.Equal(o.ssh, []string{"root@build-02"}) ||
				!slices.Equal(o.sshOptions, []string{"Port=2222"}) || o.sshProgram != "ssh" {
				t.Errorf("parsed: %+v", o)
			}
		}},
		{name: "unknown key", text: "lisen = \"localhost:844\"\n", want: `unknown key "lisen" (did you mean "listen"?); the keys are listen, origin,`},
		{name: "unknown table key", text: "[web]\nlisten = \"localhost:844\"\n", want: `unknown key "web"`},
		{name: "key in capitals", text: "LISTEN = \"localhost:843\"\n", want: `key "LISTEN" must be written "listen": keys are case-sensitive`},
		{name: "key twice in two spellings", text: "no_tls = false\nNo_TLS = true\nlisten = \"localhost:843\"\n", want: `key "No_TLS" must be written "no_tls"`},
		{name: "user given empty", text: "user = \"\"\n", want: "user: empty; leave the key out to take its default"},
		{name: "listen given empty", text: "listen = \"\"\n", want: "listen: empty; leave the key out"},
		{name: "wrong type", text: "no_tls = \"yes\"\n", want: "no_tls"},
		{name: "not TOML", text: "listen = \n", want: "line 1"},
		{name: "unprivileged port", text: "listen = \"localhost:8443\"\n", want: "listen = localhost:8443: "},
		{name: "no port", text: "listen = \"localhost\"\n", want: `listen = "localhost": `},
		{name: "plain HTTP off loopback", text: "listen = \"build-01.lan:844\"\nno_tls = true\n", want: `no_tls = true with listen = "build-01.lan:844": plain HTTP only on a loopback address`},
		{name: "an IP address", text: "listen = \"127.0.0.1:844\"\n", want: "is an IP address"},
		{name: "cert without key", text: "tls_cert = \"/etc/c.pem\"\n", want: "tls_cert: give tls_cert and tls_key together"},
		{name: "relative key", text: "tls_cert = \"/etc/c.pem\"\ntls_key = \"k.pem\"\n", want: `tls_key: "k.pem" is not an absolute path`},
		{name: "relative socket", text: "approver_sockets = [\"approver.sock\"]\n", want: `approver_sockets: "approver.sock" is not an absolute path`},
		{name: "ssh option-like destination", text: "ssh = [\"-oProxyCommand=x\"]\n", want: "ssh: the destination \"-oProxyCommand=x\" starts with '-'"},
		{name: "ssh option of two lines", text: "ssh_options = [\"A=b\\nC=d\"]\n", want: "ssh_options: an ssh option must be one non-empty line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseWebSettings("web.toml", tt.text)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				tt.check(t, o)
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), "web.toml: ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want web.toml: ...%s...", err, tt.want)
			}
		})
	}
}

// TestWebSettingsFile: the settings file is taken only when it is a
// regular file of root's that neither group nor others may write: it says,
// as root, where the web approver listens and which daemons it serves.
// approve web serve refuses any other with status 78, which the unit does
// not restart on.
func TestWebSettingsFile(t *testing.T) {
	testenv.NeedsRoot(t)
	dir := t.TempDir()
	text := []byte("listen = \"localhost:844\"\n")
	for _, tt := range []struct {
		name  string
		mode  os.FileMode
		owner int
		link  bool
		want  string
	}{
		{name: "0644 root", mode: 0o644},
		{name: "0640 root", mode: 0o640},
		{name: "group-writable", mode: 0o664, want: "lets group or others write it"},
		{name: "world-writable", mode: 0o646, want: "lets group or others write it"},
		{name: "another user's", mode: 0o644, owner: 65534, want: "owned by uid 65534, want root's"},
		{name: "a symlink", mode: 0o644, link: true, want: "too many levels of symbolic links"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".toml")
			target := path
			if tt.link {
				target += ".target"
				if err := os.Symlink(target, path); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(target, text, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(target, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(target, tt.owner, tt.owner); err != nil {
				t.Fatal(err)
			}
			_, err := readWebSettings(path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			got := runCLI(context.Background(), nil, "approve", "web", "serve", "--config", path)
			if got.code != exitConfig || !strings.Contains(got.stderr, "approve web serve: "+path+": ") {
				t.Fatalf("approve web serve: status %d, stderr %q; want 78 naming the file", got.code, got.stderr)
			}
		})
	}
}

// TestPackagedWebSettings: the package's /etc/agent-sudo/web.toml
// (packaging/web.toml) loads as the defaults, names every key (each
// commented-out example, taken alone, loads too), and the unit reads it
// where approve web serve looks by default.
func TestPackagedWebSettings(t *testing.T) {
	b, err := os.ReadFile("../../../packaging/web.toml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := parseWebSettings("packaging/web.toml", string(b))
	if err != nil {
		t.Fatalf("the packaged settings are refused: %v", err)
	}
	def, err := parseWebSettings("empty", "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.web, def.web) || len(o.sockets)+len(o.ssh)+len(o.sshOptions) != 0 {
		t.Errorf("the packaged settings are not the defaults: %+v, want %+v", o, def)
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		k, _, ok := strings.Cut(line, " = ")
		if !ok {
			continue
		}
		k = strings.TrimPrefix(k, "#")
		seen[k] = true
		example := strings.TrimPrefix(line, "#")
		if k == "tls_cert" || k == "tls_key" {
			continue // only together; both are checked below
		}
		if _, err := parseWebSettings("example", example+"\n"); err != nil {
			t.Errorf("the example %q is refused: %v", example, err)
		}
	}
	for _, k := range webSettingsKeys {
		if !seen[k] {
			t.Errorf("packaging/web.toml does not show the key %s", k)
		}
	}
	unit, err := os.ReadFile("../../../packaging/systemd/agent-sudo-web.service")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nExecStart=/usr/bin/agent-sudo approve web serve --config "+DefaultWebSettings+"\n") {
		t.Errorf("agent-sudo-web.service does not run approve web serve --config %s", DefaultWebSettings)
	}
}
