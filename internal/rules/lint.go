package rules

import (
	"github.com/agent-sudo/agent-sudo/internal/glob"

	"fmt"
	"path"
	"strconv"
	"strings"
)

// riskyProgram is a program that, given arguments its rule does not pin
// down, can run any code as its user, or write any file: an allow rule with
// "**" or a wildcard argument for it amounts to root.
type riskyProgram struct {
	// name is the program's base name, or a pattern of the rules' syntax
	// for a family ("python*").
	name string
	// example is a concrete name of the family, to test program patterns
	// against.
	example string
	// why says how, for the warning.
	why string
	// reader marks a program that only reads the files its arguments name:
	// a wildcard argument under an absolute directory ("/var/log/*") is
	// bounded by the allow rule's clean-path condition, so only "**" and
	// wildcards in other arguments (which can name /etc/shadow, or a file
	// relative to a working directory the agent chooses) are warned about.
	reader bool
}

// riskyPrograms returns the curated list the linter checks allow rules
// against. It is a function, not a variable, so that nothing can change it.
func riskyPrograms() []riskyProgram {
	runs := "runs any program given in its arguments"
	shell := "a shell: -c runs any command"
	interp := "an interpreter: -c or -e runs any code"
	editor := "an editor: writes any file, and runs commands (:! and the like)"
	pager := "a pager: !cmd runs commands, and it opens any file"
	list := []struct{ names, why string }{
		{"apt apt-get aptitude", "-o sets any APT option (-o APT::Update::Pre-Invoke::=CMD runs CMD as root), -c reads any config file, and install takes local .deb files whose scripts run as root"},
		{"dpkg", "-i installs any .deb, whose maintainer scripts run as root; --instdir and --admindir point it anywhere"},
		{"dpkg-reconfigure", "runs packages' maintainer scripts as root, with the debconf frontend its options choose"},
		{"pip pip3 npm gem cargo go composer", "installing or building runs the package's own code (setup.py, install scripts, build scripts)"},
		{"systemctl", "starts, links (systemctl link /any/unit) and edits any unit, and set-environment changes what every unit gets"},
		{"systemd-run", "runs any command as a transient unit"},
		{"service", "runs any init script"},
		{"journalctl", "--file and --directory read any file, and its pager runs commands on a terminal"},
		{"git", "-c sets any option (core.sshCommand, core.pager, core.fsmonitor, alias.x=!CMD run commands), and repositories' hooks run"},
		{"find", "-exec, -execdir and -ok run commands; -fprint and -delete write and delete any file"},
		{"tar", "--to-command, --checkpoint-action=exec= and --use-compress-program run commands, and extracting writes over any file"},
		{"zip unzip", "zip -TT (--unzip-command) runs a command, and unzip writes over any file"},
		{"env nice nohup timeout stdbuf setsid chroot xargs watch flock strace ltrace gdb taskset ionice unshare nsenter time", runs},
		{"setarch linux32 linux64 prlimit chrt setpriv capsh sg runcon cgexec unbuffer perf valgrind systemd-cat systemd-inhibit dbus-run-session ssh-agent start-stop-daemon", runs},
		{"script", "-c runs any command"},
		{"run-parts", "runs every program in the directory it is given"},
		{"ld.so ld-linux-x86-64.so.2 ld-linux.so.2 ld-linux-aarch64.so.1", "the dynamic loader runs any program it is given, with any library (--preload, --library-path)"},
		{"ldconfig", "ldconfig DIR adds any directory to the libraries every program loads, set-user-id ones included, and -f reads any configuration"},
		{"busctl dbus-send gdbus", "calls systemd's StartTransientUnit, which runs any command as root"},
		{"socat ncat", "EXEC: and SYSTEM: addresses (ncat -e, -c) run commands"},
		{"sudo su doas pkexec runuser", "runs any command as any user"},
		{"sh bash dash zsh ksh mksh fish csh tcsh busybox rbash ash posh yash lksh", shell},
		{"python* perl* ruby* node nodejs php* lua* tclsh Rscript R expect wish guile julia java jshell jrunscript", interp},
		{"dc", "! runs a shell command"},
		{"awk gawk mawk nawk", "system() and pipes to and from commands run any command"},
		{"sed", "the e command and the e flag of s run commands; w and -i write any file"},
		{"vi vim vim.* rvim rview nvim view ex ed red nano rnano pico jed joe mcedit emacs editor sensible-editor", editor},
		{"less more most pager sensible-pager zless zmore", pager},
		{"man", "-P and -H choose the programs it runs, and its pager runs commands"},
		{"rsync", "-e (--rsh) and --rsync-path run commands, and it writes over any file"},
		{"ssh", "-o ProxyCommand= and -o LocalCommand= run commands, and -F reads any config file"},
		{"scp sftp", "-o ProxyCommand= and -S run commands, and they copy over any file"},
		{"curl", "-o and -O write any file, -K reads any config, and file:// URLs read any file"},
		{"wget", "-O writes any file, -e runs any .wgetrc command, and --use-askpass runs a program"},
		{"docker podman ctr nerdctl kubectl", "docker run -v /:/host --privileged is root on the host"},
		{"make", "runs the recipes of any Makefile (-f) with any SHELL"},
		{"tee", "writes any file named in its arguments"},
		{"cp mv install ln rm", "copies, moves, links or deletes over any file, /etc/sudoers.d and /etc/passwd included"},
		{"chmod chown chgrp setfacl chattr", "changes the owner or mode of any file (chmod u+s, chown of /etc/sudoers.d)"},
		{"dd", "of= writes any file or device"},
		{"mount umount", "mounts over any directory, /etc included"},
		{"crontab at batch", "schedules any command"},
		{"logrotate", "the configuration it is given runs postrotate scripts as root"},
		{"useradd usermod adduser passwd chpasswd gpasswd visudo vipw vigr chsh chage newusers groupadd groupmod addgroup", "changes accounts, passwords, groups, login shells (chsh -s PROGRAM root) or sudoers"},
		{"modprobe insmod", "loads kernel modules: code in the kernel"},
		{"sysctl", "-w kernel.core_pattern=|CMD makes the kernel run CMD as root"},
		{"update-alternatives", "--install points a system command at any program"},
		{"dpkg-statoverride", "--add --update sets any file's owner and mode, set-user-id included"},
		{"dpkg-divert", "--rename moves any file aside, and the package's file takes its place"},
		{"dpkg-deb", "-x and -R extract a package over any directory"},
		{"setcap", "gives any file any capability (cap_setuid), which is root"},
		{"iptables ip6tables iptables-legacy iptables-nft ip6tables-legacy ip6tables-nft", "--modprobe runs any program"},
		{"ssh-keygen", "-D and -O pkcs11 load any shared library, code as root"},
		{"certbot", "--pre-hook, --post-hook and --deploy-hook run commands"},
		{"nginx apache2 apache2ctl apachectl httpd", "-c (-f) reads any configuration, which loads any module: code as root"},
		{"sort", "--compress-program runs any program, and -o writes any file"},
		{"iconv", "-o writes any file"},
		{"truncate shred", "empties or overwrites any file (/etc/shadow)"},
		{"mknod", "makes a device file for any disk or memory, readable by anyone with -m"},
		{"debugfs", "-w writes any file system directly"},
		{"ip", "ip netns exec runs any command"},
		{"openssl", "-engine and -provider load code, and -out writes any file"},
		{"psql mysql sqlite3", "\\! (or .shell) runs shell commands"},
		{"tmux screen", "run any command in a new window"},
		{"nmap", "--script runs any Lua script"},
	}
	readers := "cat head tail grep egrep fgrep zcat zgrep od xxd hexdump base64 strings diff cmp tac nl rev cut uniq paste column fold fmt pr expand look join comm jq bzcat xzcat zstdcat lz4cat"
	var out []riskyProgram
	for _, l := range list {
		for _, n := range strings.Fields(l.names) {
			ex := strings.TrimSuffix(n, "*")
			if ex != n {
				ex += "3" // python3, perl5.36 is covered by the pattern itself
			}
			out = append(out, riskyProgram{name: n, example: ex, why: l.why})
		}
	}
	for _, n := range strings.Fields(readers) {
		out = append(out, riskyProgram{name: n, example: n, reader: true,
			why: "reads any file its arguments name as root: /etc/shadow, root's SSH keys, a relative name in a working directory the agent chooses"})
	}
	return out
}

// Warning is one finding of [Lint].
type Warning struct {
	// Rule identifies the rule as errors do: `rule 3 ("apt")`.
	Rule string
	// Message says what is risky and why.
	Message string
}

// String returns the warning as one line.
func (w Warning) String() string { return w.Rule + ": " + w.Message }

// Lint returns warnings about allow rules that are valid but give away more
// than they seem to, in rule order:
//
//   - "**" or a wildcard argument for a program of the curated list of
//     programs that run code, or write any file, through their arguments
//     ("apt", "git", "find", a shell, ...): such a rule amounts to root;
//   - "**" or a wildcard argument not below an absolute directory for a
//     program that reads the files it is given ("cat", "grep", ...): such a
//     rule reads /etc/shadow;
//   - a wildcard program pattern ("/*", "*", "py*") that matches one of those
//     programs in a trusted directory;
//   - env = ["*"], which lets the request set any variable the daemon admits;
//   - a session constraint without user, uid or group: the session is a
//     label the agent chooses, so it restricts nothing on its own.
//
// Deny and ask rules are not linted: they cannot let anything run unseen.
// Lint does not validate; run it on rules that [New] accepts.
func Lint(rules []Rule, trustedDirs []string) []Warning {
	risky := riskyPrograms()
	var out []Warning
	for i, r := range rules {
		if r.Action != Allow || len(r.Match) == 0 {
			continue
		}
		label := "rule " + strconv.Itoa(i+1)
		if r.Name != "" {
			label = fmt.Sprintf("%s (%q)", label, r.Name)
		}
		warn := func(format string, args ...any) {
			out = append(out, Warning{Rule: label, Message: fmt.Sprintf(format, args...)})
		}
		prog := r.Match[0]
		pg, err := glob.Compile(prog)
		if err != nil {
			continue
		}
		if !pg.Literal() {
			var hits []string
			for _, p := range risky {
				if programPatternMatches(pg, hasSlash(prog), p.example, trustedDirs) {
					hits = append(hits, p.example)
				}
			}
			if len(hits) > 0 {
				if len(hits) > 6 {
					hits = append(hits[:6], "...")
				}
				warn("the program pattern %q matches programs that run any command through their arguments (%s); name the programs one by one", prog, strings.Join(hits, ", "))
			}
		} else {
			base := path.Base(pg.Prefix())
			for _, p := range risky {
				if g, _ := glob.Compile(p.name); !g.Match(base) {
					continue
				}
				if wild := wildcardArg(r.Match[1:], p.reader); wild != "" {
					what := "amounts to root"
					if p.reader {
						what = "reads any file"
					}
					warn("%s on %q %s (%s: %s); list the exact arguments instead", wild, base, what, p.name, p.why)
				}
				break
			}
		}
		if r.Session != "" && r.User == "" && r.UID == nil && r.Group == "" {
			warn("session %q is a label the agent chooses and restricts nothing: any user who can reach the socket can send it; add user, uid or group", r.Session)
		}
		for _, e := range r.Env {
			if e == "*" {
				warn(`env = ["*"] lets a request set any variable the daemon admits; list the variables the command needs`)
				break
			}
		}
	}
	return out
}

// programPatternMatches reports whether the program pattern g (with '/',
// when full) matches the program name in some trusted directory.
func programPatternMatches(g glob.Pattern, full bool, name string, trustedDirs []string) bool {
	if !full {
		return g.Match(name)
	}
	for _, d := range trustedDirs {
		if g.Match(path.Join(d, name)) {
			return true
		}
	}
	return false
}

// wildcardArg describes the first argument pattern of args that is "**" or
// has a wildcard, or returns "". With bounded, a wildcard pattern whose
// literal beginning is an absolute directory ("/var/log/*") does not count:
// an allow rule's wildcard stays below it.
func wildcardArg(args []string, bounded bool) string {
	for i, a := range args {
		if a == RestArgs {
			return `"**"`
		}
		if g, err := glob.Compile(a); err == nil && !g.Literal() {
			if bounded && strings.HasPrefix(g.Prefix(), "/") && strings.Count(g.Prefix(), "/") > 1 {
				continue
			}
			return fmt.Sprintf("the wildcard argument match[%d] %q", i+1, a)
		}
	}
	return ""
}
