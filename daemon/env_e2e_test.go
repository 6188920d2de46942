package daemon_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// TestE2EEnvAllowDeniedEntryRefusedAtStart is issue 9 over the real binary:
// env_allow = ["PYTHONPATH"] used to start a daemon that then refused every
// request. It must not start, and it must say which entry is wrong.
func TestE2EEnvAllowDeniedEntryRefusedAtStart(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	bin, _ := daemontest.Binaries(t)
	d := daemontest.Configure(t, daemontest.Config{Extra: `env_allow = ["LC_*", "PYTHONPATH"]`})
	cmd := exec.Command(bin, "--config", d.ConfigPath)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "LISTEN_FDS=", "LISTEN_PID=")
	cmd.Stdout, cmd.Stderr = d.Logs, d.Logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("agent-sudod exited 0 with a denied env_allow entry:\n%s", d.Logs.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("agent-sudod started with env_allow = [\"PYTHONPATH\"]:\n%s", d.Logs.String())
	}
	if want := `env_allow[1]: "PYTHONPATH" is on the deny list`; !strings.Contains(d.Logs.String(), want) {
		t.Errorf("output does not contain %q:\n%s", want, d.Logs.String())
	}
}

// TestE2EDebconfFrontendInjectionRefused is issue 10's C1 over the wire. A
// narrow allow rule for a program that evaluates DEBIAN_FRONTEND as Perl, as
// debconf does ("use Debconf::FrontEnd::$type"), must not let an agent's
// DEBIAN_FRONTEND run code: the request is refused before anything runs.
// The stand-in is perl building the same string debconf builds; the real
// dpkg-reconfigure rule of the report is checked too when it is installed
// (it is refused before it runs, so it never runs here).
func TestE2EDebconfFrontendInjectionRefused(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed")
	}
	const standIn = `my $t = ucfirst $ENV{DEBIAN_FRONTEND}; eval qq{package Debconf::FrontEnd::$t; 1} or die $@; print "frontend $t"`
	d := daemontest.Start(t, daemontest.Config{Rules: fmt.Sprintf(`
[[rule]]
name = "debconf stand-in"
action = "allow"
match = ["perl", "-e", %q]
env = ["DEBIAN_FRONTEND"]

[[rule]]
name = "reconfigure tzdata"
action = "allow"
match = ["dpkg-reconfigure", "-f", "noninteractive", "tzdata"]
env = ["DEBIAN_FRONTEND"]
`, standIn)})
	marker := filepath.Join(d.Dir, "pwned")
	payloads := []string{
		fmt.Sprintf(`noninteractive;BEGIN{system("touch %s")}#`, marker),
		fmt.Sprintf("noninteractive;BEGIN{open(F,\">%s\")}\n", marker),
		fmt.Sprintf("Noninteractive qx/touch %s/", marker),
		// The web frontend is a real debconf frontend, but it takes root's
		// answers from any local user over 127.0.0.1:8001 (red team).
		"web", "Web",
	}
	t.Run("the stand-in runs with a valid value", func(t *testing.T) {
		raw := d.Send(line(map[string]any{"pipeline": [][]string{{"perl", "-e", standIn}}, "env": map[string]string{"DEBIAN_FRONTEND": "noninteractive"}}))
		if !strings.Contains(raw, `"status":"ok"`) || !strings.Contains(raw, `"stdout":"ZnJvbnRlbmQgTm9uaW50ZXJhY3RpdmU="`) {
			t.Fatalf("the allowed request did not run as expected: %s", raw)
		}
	})
	pipelines := [][][]string{{{"perl", "-e", standIn}}}
	if _, err := os.Stat("/usr/sbin/dpkg-reconfigure"); err == nil {
		pipelines = append(pipelines, [][]string{{"dpkg-reconfigure", "-f", "noninteractive", "tzdata"}})
	}
	for _, pipeline := range pipelines {
		for i, payload := range payloads {
			t.Run(fmt.Sprintf("%s/%d", pipeline[0][0], i), func(t *testing.T) {
				raw := d.Send(line(map[string]any{"pipeline": pipeline, "env": map[string]string{"DEBIAN_FRONTEND": payload}}))
				if !contains(raw, `"status":"error"`, "environment variable DEBIAN_FRONTEND refused", "accepts a debconf frontend") {
					t.Errorf("hostile DEBIAN_FRONTEND not refused: %s", raw)
				}
				if _, err := os.Stat(marker); err == nil {
					t.Fatal("the payload ran")
				}
			})
		}
	}
}

// TestE2EEnvFloodAnswerIsSmall is issue 10's M5 over the wire: a 1 MB
// request carrying 100,000 variable names used to produce a 20 MB response
// and a 30 MB audit record. The decoder now refuses more than
// proto.MaxEnvVars variables, and a refusal describes at most five names.
func TestE2EEnvFloodAnswerIsSmall(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	auditLog := d.AuditLog
	before := fileSize(t, auditLog)

	var b strings.Builder
	fmt.Fprintf(&b, `{"id":"flood","time":%q,"pipeline":[["true"]],"env":{`, time.Now().UTC().Format(time.RFC3339))
	for i := range 100_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		n := i
		name := make([]byte, 4)
		for j := range name {
			name[j] = byte('A' + n%26)
			n /= 26
		}
		fmt.Fprintf(&b, `"%s":""`, name)
	}
	b.WriteString("}}")
	req := b.String()
	if len(req) < 1_000_000 || len(req) >= 1<<20 {
		t.Fatalf("request is %d bytes, want about 1 MB and under the cap", len(req))
	}
	raw := d.Send(req)
	if len(raw) > 512 {
		t.Errorf("response is %d bytes, want at most 512: %.300s...", len(raw), raw)
	}
	if !contains(raw, `"id":"flood"`, `"status":"error"`, `has more than 64 variables`) {
		t.Errorf("response %s does not refuse the env map with its size", raw)
	}

	// Within the cap, refused names are described five at a time.
	env := map[string]string{}
	for i := range 64 {
		env[fmt.Sprintf("NOT_ALLOWED_%02d", i)] = "x"
	}
	raw = d.Send(line(map[string]any{"id": "many", "pipeline": [][]string{{"true"}}, "env": env}))
	if !contains(raw, `"status":"error"`, "NOT_ALLOWED_00", "NOT_ALLOWED_04", "and 59 more") || strings.Contains(raw, "NOT_ALLOWED_05") {
		t.Errorf("response does not describe exactly the first five refused names: %s", raw)
	}
	if len(raw) > 2048 {
		t.Errorf("response is %d bytes, want at most 2048", len(raw))
	}
	if grown := fileSize(t, auditLog) - before; grown > 16<<10 {
		t.Errorf("the two refusals grew the audit log by %d bytes, want at most 16 KiB", grown)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
