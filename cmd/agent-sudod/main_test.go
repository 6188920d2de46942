package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// checkConfigFile writes a configuration whose sockets and audit log are in
// a fresh directory, followed by extra, and returns its path.
func checkConfigFile(t *testing.T, extra string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "asdc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "config.toml")
	content := fmt.Sprintf("socket = %q\napprover_socket = %q\naudit_log = %q\nsocket_group = \"root\"\n%s",
		filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock"), filepath.Join(dir, "audit.jsonl"), extra)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckConfig is "agent-sudod --check-config" (issue 13): exit 0 with the
// linter's warnings for a valid configuration; for an invalid one, exit 1
// with exactly the error the daemon stops on at start, where it exits 78
// (EX_CONFIG), which agent-sudo.service does not restart.
func TestCheckConfig(t *testing.T) {
	tests := []struct {
		name     string
		config   string
		code     int
		stdout   []string
		stderr   string
		startErr bool // also start the daemon and compare its error
		// startCode is the daemon's exit status at start: exitConfig
		// unless set; 1 for a user or group the user database does not
		// know, which a directory service may know once it is up.
		startCode int
	}{
		{"valid, no rules", "", 0, []string{"configuration OK (", "): 0 rules, 0 warnings"}, "", false, 0},
		{"valid with warnings", "[[rule]]\nname = \"apt\"\naction = \"allow\"\nmatch = [\"apt\", \"**\"]\n", 0,
			[]string{`warning: rule 1 ("apt"): "**" on "apt" amounts to root`, "1 rules, 1 warnings"}, "", false, 0},
		{"notify_user may use the socket", "notify = [[\"/usr/bin/true\"]]\nnotify_user = \"nobody\"\nallowed_users = [\"nobody\"]\n", 0,
			[]string{`warning: notify_user: "nobody" is listed in allowed_users as "nobody", so it may use the agent socket: an agent running as nobody can trace its notifiers`, "0 rules, 1 warnings"}, "", false, 0},
		{"unknown key", "[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nforward_agnet = true\n", 1, nil,
			`unknown key "forward_agnet" in rule 1 (did you mean "forward_agent"?)`, true, 0},
		{"invalid rule", "[[rule]]\naction = \"deny\"\nmatch = [\"id\"]\nenv = [\"LANG\"]\n", 1, nil,
			"rule 1: env is only meaningful on an allow rule (this one is \"deny\")\n" +
				"agent-sudod: hint: deny and ask rules apply whatever the request's environment: remove env from this rule\n", true, 0},
		{"unknown user in a rule", "[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nuser = \"no-such-user-asudo\"\n", 1, nil,
			`rule 1: user "no-such-user-asudo"`, true, 1},
		// Issue 22: values no one means are refused, each naming its key,
		// its value and its range (config.Ranges).
		{"values out of range", "max_clock_skew = \"2562047h\"\nmax_connections = 99999999999\nsession_grant_ttl = \"1000000h\"\nkill_grace = \"1ns\"\n", 1, nil,
			`max_clock_skew: "2562047h" is out of range: it must be from 1s to 1h
kill_grace: "1ns" is out of range: it must be from 100ms to 10m
session_grant_ttl: "1000000h" is out of range: it must be from 1m to 168h
max_connections: 99999999999 is out of range: it must be from 1 to 65536
`, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := checkConfigFile(t, tt.config)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"--check-config", "--config", p}, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", code, tt.code, stdout.String(), stderr.String())
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout %q does not contain %q", stdout.String(), w)
				}
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.stderr)
			}
			if !tt.startErr {
				return
			}
			testenv.NeedsRoot(t) // starting the daemon
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var startOut, startErr bytes.Buffer
			want := cmp.Or(tt.startCode, exitConfig)
			if code := run(ctx, []string{"--config", p}, &startOut, &startErr); code != want {
				t.Fatalf("start: exit %d, want %d (78 is EX_CONFIG, which agent-sudo.service does not restart); stderr %q", code, want, startErr.String())
			}
			if startErr.String() != stderr.String() {
				t.Errorf("--check-config said\n%q\nbut the daemon stops at start with\n%q", stderr.String(), startErr.String())
			}
		})
	}
}

// TestHelp checks agent-sudod --help (issue 13): on stdout with status 0, in
// the CLI's style, naming every flag and the exit statuses; a bad flag is
// one line on stderr and status 2; --version goes to stdout.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "-help"} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{arg}, &stdout, &stderr); code != 0 {
			t.Errorf("%s: exit %d, want 0; stderr %q", arg, code, stderr.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("%s: stderr %q, want nothing", arg, stderr.String())
		}
		out := stdout.String()
		for _, want := range []string{"usage: agent-sudod [flags]", "\nflags:\n", "\nexit status:\n", "\nsignals:\n",
			"--config FILE", "--socket PATH", "--approver-socket PATH", "--audit-log PATH", "--exec MODE",
			"--log-file FILE", "--tty", "--desktop-notify mode", "--version", "--check-config", `(default "/etc/agent-sudo/config.toml")`} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: help does not contain %q:\n%s", arg, want, out)
			}
		}
	}

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--no-such-flag"}, &stdout, &stderr); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
	if want := "agent-sudod: flag provided but not defined: -no-such-flag; run 'agent-sudod --help' for usage\n"; stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("bad flag: stdout %q stderr %q, want only stderr %q", stdout.String(), stderr.String(), want)
	}

	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"--version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "agent-sudod ") || stderr.Len() != 0 {
		t.Errorf("--version: exit %d stdout %q stderr %q, want status 0 and the version on stdout", code, stdout.String(), stderr.String())
	}
}

// TestDesktopNotifyFlag: --desktop-notify takes the modes of agent-sudo
// approve's flag, refuses any other value, and only goes with --tty (the
// only console the daemon runs); a refusal starts nothing.
func TestDesktopNotifyFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--tty", "--desktop-notify", "yes"}, "agent-sudod: --desktop-notify: \"yes\" is not a desktop notification mode; want auto, osc9, osc777 or off; run 'agent-sudod --help' for usage\n"},
		{[]string{"--desktop-notify", "osc9"}, "agent-sudod: --desktop-notify needs --tty: only the console of --tty sends desktop notifications; run 'agent-sudod --help' for usage\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), append(tt.args, "--config", checkConfigFile(t, "")), &stdout, &stderr); code != 2 || stderr.String() != tt.want || stdout.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and only %q", tt.args, code, stdout.String(), stderr.String(), tt.want)
		}
	}
	// A valid mode with --tty gets past the flags to the terminal check
	// (the test has no terminal), which it would not with a bad one.
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--tty", "--desktop-notify", "osc777", "--config", checkConfigFile(t, "")}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--tty needs a terminal") {
		t.Errorf("--tty --desktop-notify osc777 without a terminal: exit %d, stderr %q; want the terminal check", code, stderr.String())
	}
}

// TestReloadSource: a reload reads the file the daemon started from again,
// with the same command-line overrides; a daemon that started from a file
// (found at the default path, not named with --config) refuses the reload
// when the file has gone, instead of falling back to the defaults.
func TestReloadSource(t *testing.T) {
	p := checkConfigFile(t, "")
	override := filepath.Join(filepath.Dir(p), "override.sock")
	src := &source{path: p, socket: override, exec: "direct"}
	cfg, err := src.load(false)
	if err != nil {
		t.Fatal(err)
	}
	reload := src.reloader(cfg, false)
	rule := "[[rule]]\naction = \"allow\"\nmatch = [\"true\"]\n"
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(rule); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	next, err := reload()
	if err != nil {
		t.Fatal(err)
	}
	if next.Socket != override || next.Exec != "direct" || len(next.Rules) != 1 {
		t.Errorf("reloaded: socket %q, exec %q, %d rules; want the overrides %q, \"direct\" and the new rule",
			next.Socket, next.Exec, len(next.Rules), override)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := reload(); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("reload after the file has gone: error %v, want one naming %s (not the built-in defaults)", err, p)
	}
}

// TestSayErrEscapes: an error the daemon reports on stderr, and its hints,
// embed text it did not choose (a path, a value of the configuration, a
// socket's name from systemd); no control character of it reaches the
// terminal raw, and the lines of a joined error stay lines.
func TestSayErrEscapes(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"plain", errors.New("config: bad"), "agent-sudod: config: bad\n"},
		{"escape in the error", errors.New("socket \x1b]0;owned\a"), "agent-sudod: socket \\x1b]0;owned\\x07\n"},
		{"escape in the hint", hint.Wrap(errors.New("notify: bad"), "write \"=\x1b[2J\""),
			"agent-sudod: notify: bad\nagent-sudod: hint: write \"=\\x1b[2J\"\n"},
		{"joined", errors.Join(errors.New("a\rb"), errors.New("c")), "agent-sudod: a\\x0db\nc\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			sayErr(&b, c.err)
			if b.String() != c.want {
				t.Errorf("sayErr = %q, want %q", b.String(), c.want)
			}
		})
	}
}
