package packaging_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/config"
)

const (
	exampleConfig = "config.example.toml"
	nfpmConfig    = "nfpm.yaml"
)

// commentOut is the Makefile's derivation of packageConfig: every line of
// the example that is not blank and not a comment gets "# " in front.
func commentOut(example string) string {
	return regexp.MustCompile(`(?m)^([^#\s])`).ReplaceAllString(example, "# $1")
}

// TestPackageConfigIsTheExampleCommentedOut builds the config file that
// `make deb` and `make install` install as /etc/agent-sudo/config.toml and
// checks that it is the example with every setting commented out, and that
// the daemon loads it as its built-in defaults with no rules, so that after
// installing a human approves every request.
func TestPackageConfigIsTheExampleCommentedOut(t *testing.T) {
	lookTool(t, "make")
	example, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	if out, err := run(t, "..", "make", "-s", "DIST="+dist, dist+"/config.toml"); err != nil {
		t.Fatalf("make %s/config.toml: %v\n%s", dist, err, out)
	}
	packageConfig := filepath.Join(dist, "config.toml")
	installed, err := os.ReadFile(packageConfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(installed), commentOut(string(example))) {
		t.Errorf("make's %s is not %s with every setting commented out:\n%s", packageConfig, exampleConfig, installed)
	}
	for n, l := range strings.Split(string(installed), "\n") {
		if s := strings.TrimSpace(l); s != "" && s[0] != '#' {
			t.Errorf("%s:%d sets something: %q", packageConfig, n+1, l)
		}
	}
	cfg, err := config.Load(packageConfig, true)
	if err != nil {
		t.Fatalf("the daemon does not load %s: %v", packageConfig, err)
	}
	if len(cfg.Rules) != 0 {
		t.Errorf("%s has %d rules, want none (everything asks)", packageConfig, len(cfg.Rules))
	}
	def := config.Default()
	def.Source = cfg.Source
	if !reflect.DeepEqual(cfg, def) {
		t.Errorf("%s does not load as the built-in defaults:\n got %+v\nwant %+v", packageConfig, cfg, def)
	}
}

// TestNfpmContents checks that the package description ships every file
// docs/install.md lists, from sources that exist, with the configuration
// files as conffiles.
func TestNfpmContents(t *testing.T) {
	data, err := os.ReadFile(nfpmConfig)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ src, typ string }
	dst := map[string]entry{}
	var cur entry
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "- src: "):
			cur = entry{src: strings.TrimPrefix(l, "- src: ")}
		case strings.HasPrefix(l, "dst: "):
			dst[strings.TrimPrefix(l, "dst: ")] = cur
		case strings.HasPrefix(l, "type: "):
			for k, e := range dst {
				if e == cur {
					e.typ = strings.TrimPrefix(l, "type: ")
					dst[k] = e
				}
			}
		}
	}
	want := map[string]string{ // destination -> type
		"/usr/bin/agent-sudod":                               "",
		"/usr/bin/agent-sudo":                                "",
		"/usr/lib/systemd/system/agent-sudo.service":         "",
		"/usr/lib/systemd/system/agent-sudo.socket":          "",
		"/usr/lib/systemd/system/agent-sudo-approver.socket": "",
		"/usr/lib/systemd/system/agent-sudo-web.service":     "",
		"/etc/agent-sudo/web.toml":                           "config",
		"/usr/lib/sysusers.d/agent-sudo.conf":                "",
		"/usr/lib/tmpfiles.d/agent-sudo.conf":                "",
		"/etc/logrotate.d/agent-sudo":                        "config",
		"/etc/agent-sudo/config.toml":                        "config",
		"/usr/share/doc/agent-sudo/copyright":                "",
		"/usr/share/doc/agent-sudo/changelog.gz":             "",
		"/usr/share/doc/agent-sudo/README.md":                "",
		"/usr/share/doc/agent-sudo/docs/":                    "",
		"/usr/share/man/man1/agent-sudo.1.gz":                "",
		"/usr/share/man/man8/agent-sudod.8.gz":               "",
		"/usr/share/man/man5/agent-sudo.toml.5.gz":           "",
	}
	for d, typ := range want {
		e, ok := dst[d]
		if !ok {
			t.Errorf("%s does not install %s", nfpmConfig, d)
			continue
		}
		if e.typ != typ {
			t.Errorf("%s: %s has type %q, want %q", nfpmConfig, d, e.typ, typ)
		}
		src := strings.TrimPrefix(e.src, "../")
		if strings.HasPrefix(src, "dist/") || strings.ContainsAny(src, "$*") {
			continue // built by make deb, or a glob
		}
		if _, err := os.Stat("../" + src); err != nil {
			t.Errorf("%s: source of %s: %v", nfpmConfig, d, err)
		}
	}
	// sudo or sudo-rs, either: a dependency on sudo alone would remove
	// agent-sudo with sudo where sudo-rs replaces it (issue 34).
	if !strings.Contains(string(data), "\n  - sudo | sudo-rs\n") {
		t.Errorf("%s does not depend on sudo | sudo-rs", nfpmConfig)
	}
	// The unit's ExecReload runs /bin/kill, which is in procps on Debian.
	if !strings.Contains(string(data), "\n  - procps\n") {
		t.Errorf("%s does not depend on procps (/bin/kill for ExecReload)", nfpmConfig)
	}
}
