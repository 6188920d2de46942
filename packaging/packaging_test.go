package packaging_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

const (
	socketUnit   = "systemd/agent-sudo.socket"
	approverUnit = "systemd/agent-sudo-approver.socket"
	serviceUnit  = "systemd/agent-sudo.service"
	webUnit      = "systemd/agent-sudo-web.service"
	sysusersConf = "sysusers.d/agent-sudo.conf"
	tmpfilesConf = "tmpfiles.d/agent-sudo.conf"
	// installedExec is the daemon's installed path, which the service's
	// ExecStart names and which need not exist where the tests run.
	installedExec = "ExecStart=/usr/bin/agent-sudod"
)

// unitFile is a parsed systemd unit: section -> key -> values in order.
type unitFile map[string]map[string][]string

// parseUnit reads a unit file, ignoring comments and blank lines. It is
// enough for the files in this directory (no line continuations).
func parseUnit(t *testing.T, path string) unitFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: cannot parse %q", path, n, line)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// get returns the last value of section.key, as systemd would use it, or
// "" when it is not set.
func (u unitFile) get(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// TestUnitsMatchDaemon checks the units against the daemon's defaults and
// against the choices their comments explain, so that neither can drift.
func TestUnitsMatchDaemon(t *testing.T) {
	def := config.Default()
	sock := parseUnit(t, socketUnit)
	appr := parseUnit(t, approverUnit)
	svc := parseUnit(t, serviceUnit)
	web := parseUnit(t, webUnit)
	tests := []struct {
		file          string
		unit          unitFile
		section, key  string
		want          string
		why           string
		forbiddenOnly bool // want lists values the key must NOT have, '|'-separated
	}{
		{socketUnit, sock, "Socket", "ListenStream", def.Socket, "the daemon's default socket", false},
		{socketUnit, sock, "Socket", "SocketGroup", def.SocketGroup, "the daemon's default socket_group", false},
		{socketUnit, sock, "Socket", "SocketUser", "root", "only root owns the socket", false},
		{socketUnit, sock, "Socket", "SocketMode", "0660", "owner and group only", false},
		{socketUnit, sock, "Socket", "DirectoryMode", "0755", "only root may write /run/agent-sudo", false},
		{socketUnit, sock, "Socket", "Accept", "no", "one daemon serves all connections", false},
		{socketUnit, sock, "Socket", "FileDescriptorName", "agent", "the daemon takes its sockets by name", false},
		{approverUnit, appr, "Socket", "ListenStream", def.ApproverSocket, "the daemon's default approver_socket", false},
		{approverUnit, appr, "Socket", "FileDescriptorName", "approver", "the daemon takes its sockets by name", false},
		{approverUnit, appr, "Socket", "Service", "agent-sudo.service", "a console opened first starts the daemon", false},
		{approverUnit, appr, "Socket", "SocketUser", "root", "only root may approve", false},
		{approverUnit, appr, "Socket", "SocketGroup", "root", "only root may approve", false},
		{approverUnit, appr, "Socket", "SocketMode", "0600", "only root may approve (the daemon refuses any other mode)", false},
		{approverUnit, appr, "Socket", "DirectoryMode", "0755", "only root may write /run/agent-sudo", false},
		{approverUnit, appr, "Socket", "Accept", "no", "one daemon serves all connections", false},
		{approverUnit, appr, "Socket", "RemoveOnStop", "yes", "a console finds no socket, rather than a dead one, when the daemon failed", false},
		{socketUnit, sock, "Socket", "RemoveOnStop", "yes", "an agent finds no socket, rather than a dead one, when the daemon failed", false},
		{serviceUnit, svc, "Service", "RestartPreventExitStatus", "78", "agent-sudod exits 78 (EX_CONFIG) on an invalid configuration, which a restart cannot fix", false},
		{serviceUnit, svc, "Unit", "StartLimitBurst", "5", "a daemon that cannot start fails for good, and its sockets stop", false},
		{serviceUnit, svc, "Unit", "StartLimitIntervalSec", "30s", "a daemon that cannot start fails for good, and its sockets stop", false},
		{serviceUnit, svc, "Service", "Type", "notify", "the daemon reports readiness", false},
		{serviceUnit, svc, "Service", "NotifyAccess", "main", "commands must not speak for the daemon", false},
		{serviceUnit, svc, "Service", "ExecStart", "/usr/bin/agent-sudod", "the installed daemon", false},
		{serviceUnit, svc, "Service", "WatchdogSec", "30s", "a hung daemon is restarted", false},
		{serviceUnit, svc, "Service", "Restart", "on-failure", "a crashed daemon is restarted", false},
		{serviceUnit, svc, "Service", "KillMode", "mixed", "SIGTERM must not reach running commands directly", false},
		{serviceUnit, svc, "Service", "Delegate", "yes", "the daemon makes a child cgroup per request in its own cgroup", false},
		{serviceUnit, svc, "Service", "NoNewPrivileges", "yes|true|on|1", "sudo is set-user-id", true},
		{serviceUnit, svc, "Service", "ProtectSystem", "yes|true|on|1|full|strict", "approved commands write /usr, /etc and /boot", true},
		{serviceUnit, svc, "Service", "PrivateTmp", "yes|true|on|1", "agents hand files over in /tmp", true},
		{serviceUnit, svc, "Unit", "Requires", "agent-sudo.socket agent-sudo-approver.socket", "the daemon serves the sockets systemd passes it", false},
		{serviceUnit, svc, "Install", "Also", "agent-sudo.socket agent-sudo-approver.socket", "enabling the service enables both sockets", false},
		// agent-sudo-web.service: what docs/approving.md ("The web approver
		// as a service") and docs/install.md say of it.
		{webUnit, web, "Service", "ExecStart", "/usr/bin/agent-sudo approve web serve --config /etc/agent-sudo/web.toml", "its settings are /etc/agent-sudo/web.toml", false},
		{webUnit, web, "Unit", "BindsTo", "agent-sudo.service", "it cannot reconnect once it has dropped root: it stops when the daemon stops, and starting it starts the daemon", false},
		{webUnit, web, "Unit", "After", "agent-sudo.service network-online.target", "started after the daemon is ready, and after a host name to listen on resolves", false},
		{webUnit, web, "Install", "WantedBy", "multi-user.target agent-sudo.service", "enabled, it starts at boot and each time the daemon starts", false},
		{webUnit, web, "Service", "Restart", "on-failure", "its own failures (69) are retried", false},
		{webUnit, web, "Service", "RestartSec", "2s", "retried after 2 seconds", false},
		{webUnit, web, "Service", "RestartPreventExitStatus", "77 78", "a refused web.toml (78) or not root (77) is not retried: a human must fix it", false},
		{webUnit, web, "Service", "NoNewPrivileges", "yes", "the sandbox: the drop to agent-sudo-web needs no set-user-id exec", false},
		{webUnit, web, "Service", "CapabilityBoundingSet", "CAP_NET_BIND_SERVICE CAP_SETUID CAP_SETGID", "only the capabilities to bind the port and change user", false},
		{webUnit, web, "Service", "ProtectSystem", "strict", "the file system read-only", false},
		{webUnit, web, "Service", "ReadWritePaths", "-/etc/agent-sudo/web", "the generated certificate's directory the one writable place", false},
		{webUnit, web, "Service", "ProtectHome", "read-only", "homes read-only (ssh reads root's keys)", false},
		{webUnit, web, "Service", "PrivateTmp", "yes", "private /tmp", false},
		{webUnit, web, "Service", "PrivateDevices", "yes", "private devices", false},
		{webUnit, web, "Service", "ProtectKernelTunables", "yes", "no kernel tunables", false},
		{webUnit, web, "Service", "ProtectKernelModules", "yes", "no kernel modules", false},
		{webUnit, web, "Service", "ProtectKernelLogs", "yes", "no kernel logs", false},
		{webUnit, web, "Service", "ProtectClock", "yes", "no clock", false},
		{webUnit, web, "Service", "RestrictNamespaces", "yes", "no new namespaces", false},
	}
	for _, tt := range tests {
		got := tt.unit.get(tt.section, tt.key)
		if tt.forbiddenOnly {
			for _, bad := range strings.Split(tt.want, "|") {
				if strings.EqualFold(got, bad) {
					t.Errorf("%s: [%s] %s = %q, which must not be set (%s)", tt.file, tt.section, tt.key, got, tt.why)
				}
			}
			continue
		}
		if got != tt.want {
			t.Errorf("%s: [%s] %s = %q, want %q (%s)", tt.file, tt.section, tt.key, got, tt.want, tt.why)
		}
	}

	// systemctl reload signals first, so that the daemon reloads or refuses
	// every reload asked for and its status names a failed one (issue 33:
	// with the check first, an invalid file never reached the daemon, whose
	// status still showed the reload before as ok), then checks the file,
	// so that an invalid one fails the reload (non-zero, the error in the
	// journal).
	if got, want := svc["Service"]["ExecReload"], []string{"/bin/kill -HUP $MAINPID", "/usr/bin/agent-sudod --check-config"}; !slices.Equal(got, want) {
		t.Errorf("%s: ExecReload = %q, want %q: every reload must reach the daemon, and an invalid file must fail the reload", serviceUnit, got, want)
	}

	stop, err := time.ParseDuration(svc.get("Service", "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("%s: TimeoutStopSec: %v", serviceUnit, err)
	}
	if need := def.ShutdownTimeout.Duration + def.KillGrace.Duration; stop <= need {
		t.Errorf("%s: TimeoutStopSec = %v, want more than shutdown_timeout + kill_grace = %v so that the daemon can stop commands itself", serviceUnit, stop, need)
	}
}

// TestDirectoriesMatchDaemon checks that tmpfiles.d and sysusers.d create
// what the daemon's default paths and group need.
func TestDirectoriesMatchDaemon(t *testing.T) {
	def := config.Default()
	data, err := os.ReadFile(tmpfilesConf)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{} // path -> whole line
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) > 1 && !strings.HasPrefix(f[0], "#") {
			lines[f[1]] = strings.Join(f, " ")
		}
	}
	tests := []struct {
		path, want, why string
	}{
		{filepath.Dir(def.Socket), "d /run/agent-sudo 0755 root " + def.SocketGroup + " -", "holds the socket"},
		{filepath.Dir(def.ApproverSocket), "d /run/agent-sudo 0755 root " + def.SocketGroup + " -", "holds the approver socket"},
		{filepath.Dir(def.AuditLog), "d /var/log/agent-sudo 0750 root adm -", "holds the audit log"},
	}
	for _, tt := range tests {
		if got := lines[tt.path]; got != tt.want {
			t.Errorf("%s: entry for %s (%s) is %q, want %q", tmpfilesConf, tt.path, tt.why, got, tt.want)
		}
	}

	data, err = os.ReadFile(sysusersConf)
	if err != nil {
		t.Fatal(err)
	}
	want := "g " + def.SocketGroup + " -"
	found := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Join(strings.Fields(l), " ") == want {
			found = true
		}
	}
	if !found {
		t.Errorf("%s has no line %q for the default socket_group", sysusersConf, want)
	}
}

// run runs a command with a time limit and returns its combined output.
func run(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SYSTEMD_LOG_COLOR=0", "SYSTEMD_PAGER=", "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not found (%v); install systemd to run this check", name, err)
	}
	return p
}

// stageUnits copies the units into a temporary directory, points ExecStart
// at a binary that exists so that verify checks the directives rather than
// the daemon's installation, and applies edit to the service text.
func stageUnits(t *testing.T, edit func(service string) string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{socketUnit, approverUnit, serviceUnit, webUnit} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if f == serviceUnit {
			if strings.Count(text, installedExec+"\n") != 1 {
				t.Fatalf("%s: want exactly one line %q", f, installedExec)
			}
			text = strings.Replace(text, installedExec+"\n", "ExecStart=/bin/true\n", 1)
			text = strings.Replace(text, "ExecReload=/usr/bin/agent-sudod --check-config\n", "ExecReload=/bin/true\n", 1)
			text = edit(text)
		}
		if f == webUnit {
			// agent-sudo need not be installed where the test runs.
			const webExec = "ExecStart=/usr/bin/agent-sudo approve web serve --config /etc/agent-sudo/web.toml\n"
			if strings.Count(text, webExec) != 1 {
				t.Fatalf("%s: want exactly one line %q", f, webExec)
			}
			text = strings.Replace(text, webExec, "ExecStart=/bin/true\n", 1)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// verifyProblems runs systemd-analyze verify on the staged units and
// returns what it reported about them. Lines about other units (the host's
// own, pulled in as dependencies) are not ours to fix and are ignored.
func verifyProblems(t *testing.T, tool, dir string) []string {
	t.Helper()
	out, err := run(t, dir, tool, "verify", "--man=no",
		filepath.Join(dir, "agent-sudo.socket"), filepath.Join(dir, "agent-sudo-approver.socket"), filepath.Join(dir, "agent-sudo.service"),
		filepath.Join(dir, "agent-sudo-web.service"))
	var problems []string
	if err != nil {
		problems = append(problems, fmt.Sprintf("exit status: %v", err))
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "agent-sudo") || strings.Contains(l, dir) {
			problems = append(problems, l)
		}
	}
	if err != nil {
		problems = append(problems, "full output:\n"+out)
	}
	return problems
}

func TestSystemdAnalyzeVerify(t *testing.T) {
	tool := lookTool(t, "systemd-analyze")
	if _, err := os.Stat("/run/systemd"); err != nil && os.Geteuid() != 0 {
		// Seen in the README's system test: a user on a Debian that
		// systemd has not booted (a container run as a command).
		t.Skip("systemd-analyze verify needs /run/systemd, which a booted systemd makes, or root to make it; this machine has neither")
	}

	dir := stageUnits(t, func(s string) string { return s })
	if p := verifyProblems(t, tool, dir); len(p) > 0 {
		t.Errorf("systemd-analyze verify %s %s reported:\n%s", socketUnit, serviceUnit, strings.Join(p, "\n"))
	}

	// The check above is only worth something if verify reports bad
	// directives here; make sure it does.
	broken := []struct{ name, edit string }{
		{"unknown directive", "BogusDirective=1"},
		{"bad value", "ProtectSystem=strictly"},
	}
	for _, b := range broken {
		dir := stageUnits(t, func(s string) string {
			return strings.Replace(s, "[Service]\n", "[Service]\n"+b.edit+"\n", 1)
		})
		if p := verifyProblems(t, tool, dir); len(p) == 0 {
			t.Errorf("systemd-analyze verify reported nothing for a service with %s (%q); the verify check above is blind", b.name, b.edit)
		}
	}
}

// TestSysusersAndTmpfiles applies sysusers.d and tmpfiles.d to an empty
// root directory with systemd's own tools and checks the result.
func TestSysusersAndTmpfiles(t *testing.T) {
	sysusers := lookTool(t, "systemd-sysusers")
	tmpfiles := lookTool(t, "systemd-tmpfiles")
	testenv.NeedsRoot(t) // systemd-tmpfiles sets the owners of what it creates
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\n",
		"group":  "root:x:0:\nadm:x:4:\n",
	} {
		if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, c := range []struct {
		tool string
		args []string
	}{
		{sysusers, []string{"--root=" + root, abs(sysusersConf)}},
		{tmpfiles, []string{"--root=" + root, "--create", abs(tmpfilesConf)}},
	} {
		out, err := run(t, root, c.tool, c.args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", c.tool, strings.Join(c.args, " "), err, out)
		}
		for _, bad := range []string{"Unknown", "Failed", "Invalid", "ignoring", "Ignoring"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s %s reported a problem:\n%s", c.tool, strings.Join(c.args, " "), out)
				break
			}
		}
	}

	group, err := os.ReadFile(filepath.Join(root, "etc", "group"))
	if err != nil {
		t.Fatal(err)
	}
	gid := -1
	for _, l := range strings.Split(string(group), "\n") {
		if f := strings.Split(l, ":"); len(f) >= 3 && f[0] == "agent-sudo" {
			gid, _ = strconv.Atoi(f[2])
		}
	}
	if gid < 0 {
		t.Fatalf("after systemd-sysusers, %s/etc/group has no agent-sudo group:\n%s", root, group)
	}
	// The web approver's own user (its --user default, web.DefaultUser):
	// a system user no other program runs as, without a login shell.
	passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	webUser := false
	for _, l := range strings.Split(string(passwd), "\n") {
		if f := strings.Split(l, ":"); len(f) == 7 && f[0] == "agent-sudo-web" {
			uid, _ := strconv.Atoi(f[2])
			webUser = uid > 0 && uid < 1000 && f[6] == "/usr/sbin/nologin"
		}
	}
	if !webUser {
		t.Errorf("after systemd-sysusers, %s/etc/passwd has no system user agent-sudo-web with the shell /usr/sbin/nologin:\n%s", root, passwd)
	}

	tests := []struct {
		path     string
		mode     os.FileMode
		uid, gid int
	}{
		{"run/agent-sudo", 0o755, 0, gid},
		{"var/log/agent-sudo", 0o750, 0, 4},
		// agent-sudo-web.service's one writable directory (ReadWritePaths=).
		{"etc/agent-sudo/web", 0o700, 0, 0},
	}
	for _, tt := range tests {
		fi, err := os.Lstat(filepath.Join(root, tt.path))
		if err != nil {
			t.Errorf("after systemd-tmpfiles: %v", err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if !fi.IsDir() || fi.Mode().Perm() != tt.mode || int(st.Uid) != tt.uid || int(st.Gid) != tt.gid {
			t.Errorf("/%s: got dir=%v mode %04o uid %d gid %d, want dir mode %04o uid %d gid %d",
				tt.path, fi.IsDir(), fi.Mode().Perm(), st.Uid, st.Gid, tt.mode, tt.uid, tt.gid)
		}
	}
}
