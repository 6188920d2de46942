package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/fsperm"
	"github.com/agent-sudo/agent-sudo/internal/glob"
	"github.com/agent-sudo/agent-sudo/internal/notify"
	"github.com/agent-sudo/agent-sudo/internal/rules"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// DefaultPath is where the daemon looks for its configuration when it is not
// told otherwise.
const DefaultPath = "/etc/agent-sudo/config.toml"

// MaxFileBytes bounds the configuration file's size, so that a mistaken path
// (a log, a device) is refused instead of read into memory.
const MaxFileBytes = 1 << 20

// maxSocketPath is the longest path a Unix socket address can hold on Linux:
// sun_path is 108 bytes including the terminating NUL.
const maxSocketPath = 107

// CgroupMode is what the daemon does without per-request cgroups (key
// "cgroup"); see docs/config.md.
type CgroupMode string

// The cgroup modes.
const (
	// CgroupRequired: the daemon refuses to start when it cannot put each
	// request's processes in a cgroup of their own, and a request whose
	// cgroup cannot be made does not run.
	CgroupRequired CgroupMode = "required"
	// CgroupBestEffort: without a usable cgroup v2 hierarchy the daemon
	// starts anyway and runs pipelines in process groups only (processes
	// that leave the group then outlive their request). When it has one,
	// a request whose cgroup cannot be made still does not run.
	CgroupBestEffort CgroupMode = "best-effort"
)

// Config is the daemon's validated configuration. Every field has been
// checked by [Config.Validate]; a Config changed by hand should be checked
// again before use.
//
// A field's toml tag is its key in the file; a field tagged "-" is not read
// from the file.
type Config struct {
	// Source is the file the configuration was read from, or "" when it is
	// the built-in defaults.
	Source string `toml:"-"`

	// Socket is the path of the Unix socket agents connect to.
	Socket string `toml:"socket" reload:"restart"`
	// SocketGroup owns the socket file, which has mode 0660, so that its
	// members can connect: a group name or numeric id.
	SocketGroup string `toml:"socket_group" reload:"restart"`
	// AllowedUsers lists the users (names or numeric ids) whose
	// connections are served. It is meaningful only when AllowedUsersSet
	// is true; see AllowedUsersSet.
	AllowedUsers []string `toml:"allowed_users"`
	// AllowedUsersSet reports whether allowed_users appeared in the file.
	// When it did not, the daemon serves root and the members of
	// SocketGroup. When it did, exactly the listed users (together with
	// AllowedGroups) are served, so an empty list serves nobody by user.
	AllowedUsersSet bool `toml:"-"`
	// AllowedGroups lists groups (names or numeric ids) whose members'
	// connections are served. Meaningful only when AllowedGroupsSet is
	// true, as for AllowedUsers.
	AllowedGroups []string `toml:"allowed_groups"`
	// AllowedGroupsSet reports whether allowed_groups appeared in the file.
	AllowedGroupsSet bool `toml:"-"`

	// ApproverSocket is the Unix socket the human's approver connects to.
	ApproverSocket string `toml:"approver_socket" reload:"restart"`
	// Passkeys is the directory of the passkeys enrolled for the web
	// approver (agent-sudo approve web enroll), against which the daemon
	// checks signed decisions; root's, mode 0700.
	Passkeys string `toml:"passkeys" reload:"restart"`
	// AuditLog is the JSON-lines audit log file.
	AuditLog string `toml:"audit_log" reload:"restart"`
	// AuditEnvValues records environment values in full in the audit log
	// instead of their hashes.
	AuditEnvValues bool `toml:"audit_env_values" reload:"restart"`
	// AuditStdin records a request's stdin content (base64) in the audit
	// log next to its size and hash.
	AuditStdin bool `toml:"audit_stdin" reload:"restart"`

	// Exec is how privileged pipelines run.
	Exec runner.Mode `toml:"exec" reload:"restart"`
	// Cgroup says whether per-request cgroups are required.
	Cgroup CgroupMode `toml:"cgroup" reload:"restart"`
	// SudoPath is the sudo binary used when Exec is runner.ModeSudo.
	SudoPath string `toml:"sudo_path" reload:"restart"`
	// SecurePath is the PATH used to resolve programs and given to them,
	// ':'-separated. Its directories are the rule engine's trusted
	// directories.
	SecurePath string `toml:"secure_path"`
	// UnprivilegedUser runs unprivileged requests; empty means the
	// requesting peer's own user.
	UnprivilegedUser string `toml:"unprivileged_user"`
	// EnvAllow holds names, and prefixes ending in '*', of environment
	// variables allowed in requests on top of the built-in allowlist.
	EnvAllow []string `toml:"env_allow"`

	// MaxClockSkew is how far a request's time may be from the daemon's
	// clock.
	MaxClockSkew Duration `toml:"max_clock_skew"`
	// ApprovalTimeout is how long a request waits for a human's decision.
	ApprovalTimeout Duration `toml:"approval_timeout"`
	// CommandTimeout is how long an approved pipeline may run.
	CommandTimeout Duration `toml:"command_timeout"`
	// KillGrace is how long a pipeline has between SIGTERM and SIGKILL
	// when it is stopped.
	KillGrace Duration `toml:"kill_grace"`
	// ReadTimeout is how long a client has to send its request line.
	ReadTimeout Duration `toml:"read_timeout"`
	// ShutdownTimeout is how long running commands may finish after the
	// daemon gets SIGTERM.
	ShutdownTimeout Duration `toml:"shutdown_timeout"`
	// RequestPidsMax bounds the processes and threads each request's
	// cgroup may hold at once (its pids.max), so that one request (a fork
	// bomb) cannot take the pids the daemon itself needs.
	RequestPidsMax int `toml:"request_pids_max"`
	// SessionGrantTTL is how long an "allow for this session" decision
	// lasts; grants also end when the daemon restarts.
	SessionGrantTTL Duration `toml:"session_grant_ttl"`

	// MaxConnections bounds the connections from users other than root
	// served at once.
	MaxConnections int `toml:"max_connections" reload:"restart"`
	// MaxConnectionsPerUser bounds the connections one non-root uid may
	// have open or waiting at once.
	MaxConnectionsPerUser int `toml:"max_connections_per_user" reload:"restart"`
	// RootConnections are connection slots only root may use, apart from
	// MaxConnections, so other users cannot lock root out.
	RootConnections int `toml:"root_connections" reload:"restart"`
	// FirstByteTimeout is how long a new connection may stay silent before
	// it is closed; ReadTimeout still bounds the whole line.
	FirstByteTimeout Duration `toml:"first_byte_timeout"`
	// MaxRequestsPerMinute bounds the connections one non-root uid may open
	// per minute, with bursts of as many.
	MaxRequestsPerMinute int `toml:"max_requests_per_minute" reload:"restart"`

	// Notify lists the notifiers run when a request starts waiting for a
	// human: each an argument vector whose first element is the program's
	// absolute path, its arguments holding placeholders (package notify).
	Notify [][]string `toml:"notify"`
	// NotifyUser is the user the notifiers run as; never root.
	NotifyUser string `toml:"notify_user"`
	// NotifyTimeout bounds each notifier's run; its process group is
	// killed then.
	NotifyTimeout Duration `toml:"notify_timeout"`
	// WebApproverURL is the web approver's address as a phone opens it
	// (scheme://host[:port]); a notifier's {url} links to the waiting
	// request there. Empty: {url} is empty.
	WebApproverURL string `toml:"web_approver_url"`

	// Rules are the [[rule]] tables, in file order.
	Rules []rules.Rule `toml:"rule"`
}

// DefaultRequestPidsMax is request_pids_max's default: more than a
// parallel build needs, and well below systemd's default TasksMax for a
// service (15 % of the kernel's pid_max, 4,915 with its default of 32,768),
// so that a request that takes all of its own leaves the daemon plenty.
const DefaultRequestPidsMax = 1024

// Default returns the built-in configuration, used when the default
// configuration file does not exist. With no rules, every request goes to a
// human.
func Default() *Config {
	return &Config{
		Socket:          "/run/agent-sudo/agent-sudo.sock",
		SocketGroup:     "agent-sudo",
		ApproverSocket:  "/run/agent-sudo/approver.sock",
		Passkeys:        "/etc/agent-sudo/passkeys",
		AuditLog:        "/var/log/agent-sudo/audit.jsonl",
		Exec:            runner.ModeSudo,
		Cgroup:          CgroupRequired,
		SudoPath:        "/usr/bin/sudo",
		SecurePath:      "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		MaxClockSkew:    Duration{proto.DefaultMaxClockSkew},
		ApprovalTimeout: Duration{5 * time.Minute},
		CommandTimeout:  Duration{10 * time.Minute},
		KillGrace:       Duration{5 * time.Second},
		ReadTimeout:     Duration{10 * time.Second},
		ShutdownTimeout: Duration{30 * time.Second},
		RequestPidsMax:  DefaultRequestPidsMax,
		SessionGrantTTL: Duration{8 * time.Hour},
		MaxConnections:  64,

		MaxConnectionsPerUser: 8,
		RootConnections:       8,
		FirstByteTimeout:      Duration{2 * time.Second},
		MaxRequestsPerMinute:  300,

		NotifyUser:    "nobody",
		NotifyTimeout: Duration{10 * time.Second},
	}
}

// TrustedDirs returns the directories of SecurePath, in order: the
// directories in which a rule's bare program name may match.
func (c *Config) TrustedDirs() []string {
	return strings.Split(c.SecurePath, ":")
}

// Lint returns the rule linter's warnings about c's rules ([rules.Lint]),
// followed by those that depend on the rest of the configuration: an allow
// rule with forward_agent = true while unprivileged_user is empty. Such a
// rule hands the human's SSH agent to a command that runs as the requesting
// agent's own user, whose configuration files (~/.gitconfig, ~/.ssh/config)
// the agent writes and whose processes it can trace: the agent can make the
// command use the keys as it likes. And, when there are notifiers, that
// notify_user may use the agent socket ([NotifyUserWarning]).
func (c *Config) Lint() []rules.Warning {
	ws := rules.Lint(c.Rules, c.TrustedDirs())
	ws = append(ws, c.lintNotifyUser()...)
	ws = append(ws, c.lintNotRootOnly()...)
	if c.UnprivilegedUser != "" {
		return ws
	}
	for i, r := range c.Rules {
		if r.Action != rules.Allow || !r.ForwardAgent {
			continue
		}
		ws = append(ws, rules.Warning{Rule: ruleLabel(i, r.Name), Message: "forward_agent = true with unprivileged_user empty hands the human's SSH agent to a command running as the requesting agent's own user, " +
			"whose configuration (~/.gitconfig, ~/.ssh/config) the agent writes and whose processes it can trace; set unprivileged_user to an account agents cannot write to, or let a human decide"})
	}
	return ws
}

// NotifyUserWarning is the Rule of [Config.Lint]'s warning that
// notify_user may use the agent socket.
const NotifyUserWarning = "notify_user"

// lintNotifyUser warns when there are notifiers and notify_user may use
// the agent socket (the users and groups of "Who can connect" in
// docs/config.md): an agent running as that user can trace its notifiers
// and make them show or send anything. Names that do not resolve are left
// to the checks that refuse them.
func (c *Config) lintNotifyUser() []rules.Warning {
	if len(c.Notify) == 0 {
		return nil
	}
	t, err := runner.LookupTarget(c.NotifyUser)
	if err != nil {
		return nil
	}
	users, groups, groupKey := []string{"root"}, []string{c.SocketGroup}, "socket_group"
	if c.AllowedUsersSet || c.AllowedGroupsSet {
		users, groups, groupKey = c.AllowedUsers, c.AllowedGroups, "allowed_groups"
	}
	why := ""
	for _, u := range users {
		if uid, err := account.UID(u); err == nil && uid == t.UID {
			why = fmt.Sprintf("is listed in allowed_users as %q", u)
			break
		}
	}
	for _, g := range groups {
		if why != "" {
			break
		}
		if gid, err := account.GID(g); err == nil && (gid == t.GID || slices.Contains(t.Groups, gid)) {
			why = fmt.Sprintf("is a member of %s %q", groupKey, g)
		}
	}
	if why == "" {
		return nil
	}
	return []rules.Warning{{Rule: NotifyUserWarning, Message: fmt.Sprintf("%q %s, so it may use the agent socket: an agent running as %s can trace its notifiers "+
		"and make a notification show or send anything (even that a request was approved); notifications only inform, decide at a console, "+
		"and run notifiers as a user no agent runs as where you can (see docs/config.md, \"Notifiers\")", c.NotifyUser, why, c.NotifyUser)}}
}

// lintNotRootOnly warns, in direct mode, about each allow rule whose
// program someone other than root can change, as the daemon would flag it
// NOT ROOT-ONLY on the console (runner.Resolved.Untrusted): a program
// named exactly (a path, or a name found on secure_path) that resolves
// through such a directory or is such a file, or a program pattern whose
// directory ("/opt/tools/*") is such a directory. Whoever can write there
// can make the rule run their own code as root without a human. (In sudo
// mode such programs are refused at request time.) A program that does
// not exist when the configuration is read is not judged.
func (c *Config) lintNotRootOnly() []rules.Warning {
	if c.Exec == runner.ModeSudo {
		return nil
	}
	var ws []rules.Warning
	for i, r := range c.Rules {
		if r.Action != rules.Allow || len(r.Match) == 0 {
			continue
		}
		prog := r.Match[0]
		pg, err := glob.Compile(prog)
		if err != nil {
			continue
		}
		var res runner.Resolved
		pre := pg.Prefix()
		switch slash := strings.LastIndexByte(pre, '/'); {
		case pg.Literal():
			res, err = runner.Resolve(pre, c.SecurePath)
		case strings.HasPrefix(pre, "/") && slash > 0:
			res, err = runner.ResolveDir(pre[:slash])
		default:
			continue
		}
		if err != nil || len(res.Untrusted) == 0 {
			continue
		}
		w := res.Untrusted[0]
		ws = append(ws, rules.Warning{Rule: ruleLabel(i, r.Name), Message: fmt.Sprintf(
			"the program %q is NOT ROOT-ONLY: %s can be changed by someone other than root (%s), who can then make this allow rule run their own code as root without a human; install it in a root-owned directory, or let a human decide (action = \"ask\")",
			prog, w.Path, w.Why)})
	}
	return ws
}

// Engine compiles the rules into an engine whose trusted directories are
// [Config.TrustedDirs], resolving the user and group names the rules name
// with the system's user database ([OSAccounts]). For a Config from [Load],
// [Parse] or [Default] it fails only when such a name does not exist.
func (c *Config) Engine() (*rules.Engine, error) {
	e, err := rules.New(c.Rules, c.TrustedDirs(), OSAccounts{})
	if err != nil {
		return nil, fmt.Errorf("build rule engine: %w", err)
	}
	return e, nil
}

// EnvPolicy compiles the environment policy: the secure path and the
// env_allow entries with the built-in allowlist and the deny list of package
// runner. For a Config from [Load], [Parse] or [Default] it does not fail.
func (c *Config) EnvPolicy() (*runner.EnvPolicy, error) {
	p, err := runner.NewEnvPolicy(c.SecurePath, c.EnvAllow)
	if err != nil {
		return nil, fmt.Errorf("build environment policy: %w", err)
	}
	return p, nil
}

// OSAccounts resolves user and group names with the system's user database
// (os/user).
type OSAccounts struct{}

// LookupUser returns the uid of the user called name ([account.UID]).
func (OSAccounts) LookupUser(name string) (uint32, error) { return account.UID(name) }

// LookupGroup returns the gid of the group called name ([account.GID]).
func (OSAccounts) LookupGroup(name string) (uint32, error) { return account.GID(name) }

// Load reads and validates the configuration file at path. When explicit is
// false and nothing exists at path, it returns [Default]. Every error names
// path.
//
// The file must be a regular file with one link, owned by root or by the
// calling user, and must not be writable by group or others ([fsperm.File]).
func Load(path string, explicit bool) (*Config, error) {
	c, err := load(path, explicit)
	if err != nil {
		return nil, fmt.Errorf("load config %s: %w", path, err)
	}
	return c, nil
}

func load(path string, explicit bool) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			// A dangling symbolic link is not "no file": it is a mistake
			// worth reporting rather than falling back to defaults.
			if _, lerr := os.Lstat(path); errors.Is(lerr, fs.ErrNotExist) {
				return Default(), nil
			}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := fsperm.File("file", fi, "whoever can write it can grant themselves root"); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("file is larger than %d bytes", MaxFileBytes)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, err
	}
	c.Source = path
	return c, nil
}

// Parse decodes and validates a configuration from TOML text. Keys absent
// from data keep their [Default] values.
func Parse(data []byte) (*Config, error) {
	if err := notifyShape(data); err != nil {
		return nil, err
	}
	c := Default()
	md, err := toml.Decode(string(data), c)
	if err != nil {
		return nil, err
	}
	tables := ruleTables(data)
	if err := errors.Join(unknownKeys(md, tables), miscasedKeys(md, tables)); err != nil {
		return nil, err
	}
	c.AllowedUsersSet = md.IsDefined("allowed_users")
	c.AllowedGroupsSet = md.IsDefined("allowed_groups")
	if err := errors.Join(emptyRuleRestrictions(tables), c.Validate()); err != nil {
		return nil, err
	}
	return c, nil
}

// ruleTables decodes data's rule tables again generically, each as the keys
// written in it, in file order: the key paths of toml.MetaData do not say
// which rule a key is in. It returns nil when data has none.
func ruleTables(data []byte) []map[string]any {
	var generic struct {
		Rule []map[string]any `toml:"rule"`
	}
	if _, err := toml.Decode(string(data), &generic); err != nil {
		return nil
	}
	return generic.Rule
}

// notifyShape refuses a notify written as one flat list of strings, such
// as notify = ["/usr/bin/notify-send", "command: {command}"], with a message that
// shows the shape wanted: the decoder's own error would only say the types
// differ. Any other problem is left to the decoder.
func notifyShape(data []byte) error {
	var generic struct {
		Notify any `toml:"notify"`
	}
	if _, err := toml.Decode(string(data), &generic); err != nil {
		return nil
	}
	list, ok := generic.Notify.([]any)
	if !ok {
		return nil
	}
	for i, v := range list {
		if _, ok := v.(string); ok {
			return fmt.Errorf("notify: element %d is a string; notify is a list of notifiers, each a list of strings, so one notifier is written "+
				"notify = [[\"/usr/bin/notify-send\", \"agent-sudo: {session} asks\", \"command: {command}\"]] (two pairs of brackets)", i)
		}
	}
	return nil
}

// miscasedKeys refuses a key written in another case than the
// configuration's: the decoder matches keys to fields regardless of case,
// so "SOCKET" would set socket and a [[Rule]] table would replace the
// [[rule]] ones. A careful reader takes the file to mean exactly what it
// says; keys are case-sensitive in TOML.
func miscasedKeys(md toml.MetaData, tables []map[string]any) error {
	var msgs []string
	top, inRule := topKeys(), ruleKeys()
	for _, k := range md.Keys() {
		if len(k) == 1 {
			if want := otherCase(k[0], top); want != "" {
				msgs = append(msgs, fmt.Sprintf("key %q must be written %q: keys are case-sensitive", k[0], want))
			}
		}
	}
	for i, t := range tables {
		for _, key := range slices.Sorted(maps.Keys(t)) {
			if want := otherCase(key, inRule); want != "" {
				msgs = append(msgs, fmt.Sprintf("key %q in %s must be written %q: keys are case-sensitive", key, ruleLabel(i, t["name"]), want))
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// otherCase returns the key of known that key equals but for case, or ""
// when key is spelt exactly as a known key or matches none.
func otherCase(key string, known []string) string {
	if slices.Contains(known, key) {
		return ""
	}
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	return ""
}

// emptyRuleRestrictions refuses a rule's user, group or session written as
// "": the field would be read as absent, so the rule would apply to every
// user, group or session, the opposite of what writing the key suggests.
func emptyRuleRestrictions(tables []map[string]any) error {
	var errs []error
	for i, t := range tables {
		for _, key := range []string{"user", "group", "session"} {
			if v, ok := t[key]; ok && v == "" {
				errs = append(errs, fmt.Errorf("%s: %s is empty, which would restrict nothing; leave %s out to apply the rule to every %s, or name one", ruleLabel(i, t["name"]), key, key, key))
			}
		}
	}
	return errors.Join(errs...)
}

// Range is the values a duration or count key accepts, both ends
// included. Every duration and count key has one: a value outside it is one
// no deployment means (a 292-year clock skew, a nanosecond of kill grace),
// and is refused by Validate with a message naming the key, the value and
// the range. Why each range is what it is: docs/config.md, "Ranges".
type Range struct {
	// Key is the configuration key.
	Key string
	// Min and Max are the ends for a duration key; MinCount and MaxCount
	// for a count key, whose Min and Max are zero.
	Min, Max           time.Duration
	MinCount, MaxCount int
	duration           func(*Config) time.Duration
	count              func(*Config) int
}

// IsDuration says whether r is a duration key's range.
func (r Range) IsDuration() bool { return r.duration != nil }

// String writes the range as docs/config.md does: "1s to 1h", "1 to 65536".
func (r Range) String() string {
	if r.IsDuration() {
		return FormatDuration(r.Min) + " to " + FormatDuration(r.Max)
	}
	return strconv.Itoa(r.MinCount) + " to " + strconv.Itoa(r.MaxCount)
}

// check returns why c's value of r's key is out of range, or "".
func (r Range) check(c *Config) string {
	if r.IsDuration() {
		if v := r.duration(c); v < r.Min || v > r.Max {
			return fmt.Sprintf("%q is out of range: it must be from %s to %s", FormatDuration(v), FormatDuration(r.Min), FormatDuration(r.Max))
		}
		return ""
	}
	if v := r.count(c); v < r.MinCount || v > r.MaxCount {
		return fmt.Sprintf("%d is out of range: it must be from %d to %d", v, r.MinCount, r.MaxCount)
	}
	return ""
}

// Ranges returns the range of every duration and count key, in the order
// of the table of keys in docs/config.md.
func Ranges() []Range {
	dur := func(key string, min, max time.Duration, f func(*Config) *Duration) Range {
		return Range{Key: key, Min: min, Max: max, duration: func(c *Config) time.Duration { return f(c).Duration }}
	}
	num := func(key string, min, max int, f func(*Config) *int) Range {
		return Range{Key: key, MinCount: min, MaxCount: max, count: func(c *Config) int { return *f(c) }}
	}
	const day = 24 * time.Hour
	return []Range{
		dur("max_clock_skew", time.Second, time.Hour, func(c *Config) *Duration { return &c.MaxClockSkew }),
		dur("approval_timeout", 100*time.Millisecond, day, func(c *Config) *Duration { return &c.ApprovalTimeout }),
		dur("command_timeout", time.Second, 7*day, func(c *Config) *Duration { return &c.CommandTimeout }),
		dur("kill_grace", 100*time.Millisecond, 10*time.Minute, func(c *Config) *Duration { return &c.KillGrace }),
		dur("read_timeout", 100*time.Millisecond, 10*time.Minute, func(c *Config) *Duration { return &c.ReadTimeout }),
		dur("shutdown_timeout", 10*time.Millisecond, day, func(c *Config) *Duration { return &c.ShutdownTimeout }),
		num("request_pids_max", 16, 4194304, func(c *Config) *int { return &c.RequestPidsMax }),
		dur("session_grant_ttl", time.Minute, 7*day, func(c *Config) *Duration { return &c.SessionGrantTTL }),
		num("max_connections", 1, 65536, func(c *Config) *int { return &c.MaxConnections }),
		num("max_connections_per_user", 1, 65536, func(c *Config) *int { return &c.MaxConnectionsPerUser }),
		num("root_connections", 1, 1024, func(c *Config) *int { return &c.RootConnections }),
		dur("first_byte_timeout", 10*time.Millisecond, 10*time.Minute, func(c *Config) *Duration { return &c.FirstByteTimeout }),
		num("max_requests_per_minute", 1, 60000, func(c *Config) *int { return &c.MaxRequestsPerMinute }),
		dur("notify_timeout", 100*time.Millisecond, 10*time.Minute, func(c *Config) *Duration { return &c.NotifyTimeout }),
	}
}

// FormatDuration writes d as time.Duration.String does, without the zero
// minutes and seconds it adds after hours and minutes: "24h", "1h30m",
// "10m", "1m30s", "500ms".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Duration is a [time.Duration] that the configuration file writes as a
// string with a unit: "500ms", "90s", "5m", "1h30m".
type Duration struct{ time.Duration }

// UnmarshalText implements [encoding.TextUnmarshaler]: text is read by
// [time.ParseDuration].
func (d *Duration) UnmarshalText(text []byte) error {
	p, err := time.ParseDuration(string(text))
	if err != nil {
		return fmt.Errorf("invalid duration %q (use a number with a unit, such as \"90s\", \"5m\" or \"1h30m\"): %w", text, err)
	}
	d.Duration = p
	return nil
}

// UnmarshalTOML implements [toml.Unmarshaler], which the decoder prefers to
// UnmarshalText: it refuses any TOML value but a string, and gives a string
// to UnmarshalText.
func (d *Duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("a duration must be a string with a unit, such as \"90s\" or \"5m\"; got %v (%T)", v, v)
	}
	return d.UnmarshalText([]byte(s))
}

// topKeys and ruleKeys are the known keys, for suggestions: the toml tags
// of Config and of rules.Rule.
func topKeys() []string { return tagKeys(reflect.TypeFor[Config]()) }

func ruleKeys() []string { return tagKeys(reflect.TypeFor[rules.Rule]()) }

// tagKeys returns the toml tags of the fields of struct type t, in field
// order, leaving out fields tagged "-".
func tagKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if k, _, _ := strings.Cut(f.Tag.Get("toml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// unknownKeys reports every key of the file that the configuration does not
// have. Keys inside [[rule]] tables are reported with the rule they are in.
func unknownKeys(md toml.MetaData, tables []map[string]any) error {
	undecoded := md.Undecoded()
	if len(undecoded) == 0 {
		return nil
	}
	reported := map[string]bool{}
	var msgs []string
	for _, k := range undecoded {
		// Report a table, not also each key inside it.
		if len(k) > 1 && reported[toml.Key(k[:len(k)-1]).String()] {
			reported[k.String()] = true
			continue
		}
		reported[k.String()] = true
		if k[0] == "rule" && len(k) >= 2 {
			msgs = append(msgs, unknownRuleKey(tables, k[1:]))
			continue
		}
		msg := fmt.Sprintf("unknown key %q", k.String())
		if s := suggest(k.String(), topKeys()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		msgs = append(msgs, msg)
	}
	return errors.New(strings.Join(msgs, "; "))
}

// unknownRuleKey describes an unknown key inside [[rule]] tables, naming
// the rules that have it ([ruleTables]).
func unknownRuleKey(tables []map[string]any, key toml.Key) string {
	var where []string
	for i, r := range tables {
		if _, ok := r[key[0]]; ok {
			where = append(where, ruleLabel(i, r["name"]))
		}
	}
	msg := fmt.Sprintf("unknown key %q in [[rule]]", key.String())
	if len(where) > 0 {
		msg = fmt.Sprintf("unknown key %q in %s", key.String(), strings.Join(where, ", "))
	}
	if s := suggest(key.String(), ruleKeys()); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func ruleLabel(i int, name any) string {
	if s, ok := name.(string); ok && s != "" {
		return fmt.Sprintf("rule %d (%q)", i+1, s)
	}
	return "rule " + strconv.Itoa(i+1)
}

// suggest returns the known key closest to key, if it is close enough to be
// a plausible typo.
func suggest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Validate checks every field and returns all problems found, each naming
// its key, joined with errors.Join; nil means the configuration is usable.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}

	checkSocket := func(key, p string) {
		if err := checkPath(p); err != nil {
			add(key, "%v", err)
		} else if len(p) > maxSocketPath {
			add(key, "%q is %d bytes long; a Unix socket path may be at most %d bytes", p, len(p), maxSocketPath)
		}
	}
	checkSocket("socket", c.Socket)
	checkSocket("approver_socket", c.ApproverSocket)
	if err := checkPath(c.Passkeys); err != nil {
		add("passkeys", "%v", err)
	}
	if c.WebApproverURL != "" {
		if err := checkWebApproverURL(c.WebApproverURL); err != nil {
			add("web_approver_url", "%v", err)
		}
	}
	if c.Socket == c.ApproverSocket && c.Socket != "" {
		add("approver_socket", "%q is also the agents' socket; the two must differ", c.ApproverSocket)
	}
	if err := rules.CheckAccount(c.SocketGroup, "group"); err != nil {
		add("socket_group", "%v", err)
	}
	for i, u := range c.AllowedUsers {
		if err := rules.CheckAccount(u, "user"); err != nil {
			add(fmt.Sprintf("allowed_users[%d]", i), "%v", err)
		}
	}
	for i, g := range c.AllowedGroups {
		if err := rules.CheckAccount(g, "group"); err != nil {
			add(fmt.Sprintf("allowed_groups[%d]", i), "%v", err)
		}
	}
	if err := checkPath(c.AuditLog); err != nil {
		add("audit_log", "%v", err)
	}

	switch c.Exec {
	case runner.ModeSudo, runner.ModeDirect:
	default:
		add("exec", "%q is not valid; it must be %q or %q", string(c.Exec), runner.ModeSudo, runner.ModeDirect)
	}
	switch c.Cgroup {
	case CgroupRequired, CgroupBestEffort:
	default:
		add("cgroup", "%q is not valid; it must be %q or %q", string(c.Cgroup), CgroupRequired, CgroupBestEffort)
	}
	if err := checkPath(c.SudoPath); err != nil {
		add("sudo_path", "%v", err)
	}
	if c.SecurePath == "" {
		add("secure_path", "must not be empty")
	} else {
		for i, d := range c.TrustedDirs() {
			if d == "" {
				add("secure_path", "element %d is empty; an empty PATH element means the current directory, which an agent may control", i+1)
			} else if err := checkPath(d); err != nil {
				add("secure_path", "element %d: %v", i+1, err)
			}
		}
	}
	if u := c.UnprivilegedUser; u != "" {
		if err := rules.CheckAccount(u, "user"); err != nil {
			add("unprivileged_user", "%v", err)
		} else if u == "root" || u == "0" {
			add("unprivileged_user", "%q is root; unprivileged requests must not run as root", u)
		}
	}
	// The environment policy (package runner) is checked here, once: an
	// entry it would refuse stops the daemon from starting.
	for i, e := range c.EnvAllow {
		if err := runner.ValidAllowPattern(e); err != nil {
			add(fmt.Sprintf("env_allow[%d]", i), "%v", err)
		}
	}

	for _, r := range Ranges() {
		if msg := r.check(c); msg != "" {
			add(r.Key, "%s", msg)
		}
	}

	if len(c.Notify) > notify.MaxNotifiers {
		add("notify", "lists %d notifiers; at most %d are allowed", len(c.Notify), notify.MaxNotifiers)
	}
	for i, argv := range c.Notify {
		if err := notify.Check(fmt.Sprintf("notify[%d]", i), argv); err != nil {
			errs = append(errs, err)
		}
	}
	if u := c.NotifyUser; u == "" {
		add("notify_user", "must not be empty; notifiers run as this user (the default is \"nobody\")")
	} else if err := rules.CheckAccount(u, "user"); err != nil {
		add("notify_user", "%v", err)
	} else if u == "root" || u == "0" {
		add("notify_user", "%q is root; notifiers run commands with text the agent chose and never run as root", u)
	}

	// Rules are checked against the trusted directories only when those
	// are valid; otherwise the error would be about secure_path twice.
	dirs := c.TrustedDirs()
	if slices.ContainsFunc(dirs, func(d string) bool { return checkPath(d) != nil }) {
		dirs = nil
	}
	if _, err := rules.New(c.Rules, dirs, nil); err != nil {
		errs = append(errs, err) // already names the rule: "rule 2 (\"x\"): ..."
	}
	return errors.Join(errs...)
}

// checkPath requires a clean absolute path.
func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("must not be empty")
	case !filepath.IsAbs(p):
		return fmt.Errorf("%q is not an absolute path", p)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%q contains a NUL byte", p)
	case filepath.Clean(p) != p:
		return fmt.Errorf("%q is not a clean path; write %q", p, filepath.Clean(p))
	}
	return nil
}

// checkWebApproverURL accepts http:// or https:// and a host, with an
// optional port, and nothing else: no user, path, query or fragment, so
// that {url} carries nothing but the request's id.
func checkWebApproverURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(s, " \t\r\n") {
		return fmt.Errorf("%q: want scheme://host[:port], https or http, nothing after the host", s)
	}
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return fmt.Errorf("%q: the port %q is not a port number from 1 to 65535", s, p)
		}
	}
	return nil
}
