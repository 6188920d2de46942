package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

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

// ExecMode is how the daemon runs privileged pipelines.
type ExecMode string

// The execution modes.
const (
	// ExecSudo runs each privileged stage through sudo (SudoPath), so that
	// sudo's own logging, PAM session and policy apply as well.
	ExecSudo ExecMode = "sudo"
	// ExecDirect runs privileged stages directly as the daemon's root
	// user, without sudo.
	ExecDirect ExecMode = "direct"
)

// CgroupMode is what the daemon does without per-request cgroups (key
// "cgroup"); see docs/config.md.
type CgroupMode string

// The cgroup modes.
const (
	// CgroupRequired: the daemon refuses to start when it cannot put each
	// request's processes in a cgroup of their own.
	CgroupRequired CgroupMode = "required"
	// CgroupBestEffort: without a usable cgroup v2 hierarchy the daemon
	// starts anyway and runs pipelines in process groups only.
	CgroupBestEffort CgroupMode = "best-effort"
)

// Config is the daemon's validated configuration. Every field has been
// checked by [Config.Validate]; a Config changed by hand should be checked
// again before use.
type Config struct {
	// Source is the file the configuration was read from, or "" when it is
	// the built-in defaults.
	Source string

	// Socket is the path of the Unix socket agents connect to (key
	// "socket").
	Socket string
	// SocketGroup owns the socket file, which has mode 0660, so that its
	// members can connect (key "socket_group"): a group name or numeric id.
	SocketGroup string
	// AllowedUsers lists the users (names or numeric ids) whose
	// connections are served (key "allowed_users"). It is meaningful only
	// when AllowedUsersSet is true; see AllowedUsersSet.
	AllowedUsers []string
	// AllowedUsersSet reports whether allowed_users appeared in the file.
	// When it did not, the daemon serves root and the members of
	// SocketGroup. When it did, exactly the listed users (together with
	// AllowedGroups) are served, so an empty list serves nobody by user.
	AllowedUsersSet bool
	// AllowedGroups lists groups (names or numeric ids) whose members'
	// connections are served (key "allowed_groups"). Meaningful only when
	// AllowedGroupsSet is true, as for AllowedUsers.
	AllowedGroups []string
	// AllowedGroupsSet reports whether allowed_groups appeared in the file.
	AllowedGroupsSet bool

	// ApproverSocket is the Unix socket the human's approver connects to
	// (key "approver_socket").
	ApproverSocket string
	// AuditLog is the JSON-lines audit log file (key "audit_log").
	AuditLog string
	// AuditEnvValues records environment values in full in the audit log
	// instead of their hashes (key "audit_env_values").
	AuditEnvValues bool
	// AuditStdin records a request's stdin content (base64) in the audit
	// log next to its size and hash (key "audit_stdin").
	AuditStdin bool

	// Exec is how privileged pipelines run (key "exec").
	Exec ExecMode
	// Cgroup says whether per-request cgroups are required (key "cgroup").
	Cgroup CgroupMode
	// SudoPath is the sudo binary used when Exec is ExecSudo (key
	// "sudo_path").
	SudoPath string
	// SecurePath is the PATH used to resolve programs and given to them,
	// ':'-separated (key "secure_path"). Its directories are the rule
	// engine's trusted directories.
	SecurePath string
	// UnprivilegedUser runs unprivileged requests (key
	// "unprivileged_user"); empty means the requesting peer's own user.
	UnprivilegedUser string
	// EnvAllow holds names, and prefixes ending in '*', of environment
	// variables allowed in requests on top of the built-in allowlist (key
	// "env_allow").
	EnvAllow []string

	// MaxClockSkew is how far a request's time may be from the daemon's
	// clock (key "max_clock_skew").
	MaxClockSkew time.Duration
	// ApprovalTimeout is how long a request waits for a human's decision
	// (key "approval_timeout").
	ApprovalTimeout time.Duration
	// CommandTimeout is how long an approved pipeline may run (key
	// "command_timeout").
	CommandTimeout time.Duration
	// KillGrace is how long a pipeline has between SIGTERM and SIGKILL
	// when it is stopped (key "kill_grace").
	KillGrace time.Duration
	// ReadTimeout is how long a client has to send its request line (key
	// "read_timeout").
	ReadTimeout time.Duration
	// ShutdownTimeout is how long running commands may finish after the
	// daemon gets SIGTERM (key "shutdown_timeout").
	ShutdownTimeout time.Duration
	// SessionGrantTTL is how long an "allow for this session" decision
	// lasts (key "session_grant_ttl"); grants also end when the daemon
	// restarts.
	SessionGrantTTL time.Duration

	// MaxConnections bounds the connections from users other than root
	// served at once (key "max_connections").
	MaxConnections int
	// MaxConnectionsPerUser bounds the connections one non-root uid may
	// have open or waiting at once (key "max_connections_per_user").
	MaxConnectionsPerUser int
	// RootConnections are connection slots only root may use, apart from
	// MaxConnections, so other users cannot lock root out (key
	// "root_connections").
	RootConnections int
	// FirstByteTimeout is how long a new connection may stay silent before
	// it is closed (key "first_byte_timeout"); ReadTimeout still bounds the
	// whole line.
	FirstByteTimeout time.Duration
	// MaxRequestsPerMinute bounds the connections one non-root uid may open
	// per minute, with bursts of as many (key "max_requests_per_minute").
	MaxRequestsPerMinute int

	// Rules are the [[rule]] tables, in file order.
	Rules []rules.Rule
}

// Default returns the built-in configuration, used when the default
// configuration file does not exist. With no rules, every request goes to a
// human.
func Default() *Config {
	return &Config{
		Socket:          "/run/agent-sudo/agent-sudo.sock",
		SocketGroup:     "agent-sudo",
		ApproverSocket:  "/run/agent-sudo/approver.sock",
		AuditLog:        "/var/log/agent-sudo/audit.jsonl",
		Exec:            ExecSudo,
		Cgroup:          CgroupRequired,
		SudoPath:        "/usr/bin/sudo",
		SecurePath:      "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		MaxClockSkew:    proto.DefaultMaxClockSkew,
		ApprovalTimeout: 5 * time.Minute,
		CommandTimeout:  10 * time.Minute,
		KillGrace:       5 * time.Second,
		ReadTimeout:     10 * time.Second,
		ShutdownTimeout: 30 * time.Second,
		SessionGrantTTL: 8 * time.Hour,
		MaxConnections:  64,

		MaxConnectionsPerUser: 8,
		RootConnections:       8,
		FirstByteTimeout:      2 * time.Second,
		MaxRequestsPerMinute:  300,
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
// command use the keys as it likes.
func (c *Config) Lint() []rules.Warning {
	ws := rules.Lint(c.Rules, c.TrustedDirs())
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

// LookupUser returns the uid of the user called name.
func (OSAccounts) LookupUser(name string) (uint32, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("user %q has a non-numeric uid %q", name, u.Uid)
	}
	return uint32(id), nil
}

// LookupGroup returns the gid of the group called name.
func (OSAccounts) LookupGroup(name string) (uint32, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("group %q has a non-numeric gid %q", name, g.Gid)
	}
	return uint32(id), nil
}

// Load reads and validates the configuration file at path. When explicit is
// false and nothing exists at path, it returns [Default]. Every error names
// path.
//
// The file must be a regular file owned by root or by the calling user, and
// must not be writable by group or others.
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
	if err := checkFile(fi); err != nil {
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

// checkFile refuses a file that someone other than root (or the daemon's own
// user) could have written.
func checkFile(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (mode %v)", fi.Mode())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("file is writable by group or others (mode %04o); whoever can write it can grant themselves root, so run chmod go-w on it", perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if uid := int(st.Uid); uid != 0 && uid != os.Geteuid() {
			return fmt.Errorf("file is owned by uid %d; it must be owned by root", uid)
		}
	}
	return nil
}

// Parse decodes and validates a configuration from TOML text. Keys absent
// from data keep their [Default] values.
func Parse(data []byte) (*Config, error) {
	raw := fromConfig(Default())
	md, err := toml.Decode(string(data), &raw)
	if err != nil {
		return nil, err
	}
	if err := unknownKeys(data, md); err != nil {
		return nil, err
	}
	c, err := raw.toConfig()
	if err != nil {
		return nil, err
	}
	c.AllowedUsersSet = md.IsDefined("allowed_users")
	c.AllowedGroupsSet = md.IsDefined("allowed_groups")
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// file is the TOML shape of the configuration.
type file struct {
	Socket           string   `toml:"socket"`
	SocketGroup      string   `toml:"socket_group"`
	AllowedUsers     []string `toml:"allowed_users"`
	AllowedGroups    []string `toml:"allowed_groups"`
	ApproverSocket   string   `toml:"approver_socket"`
	AuditLog         string   `toml:"audit_log"`
	AuditEnvValues   bool     `toml:"audit_env_values"`
	AuditStdin       bool     `toml:"audit_stdin"`
	Exec             string   `toml:"exec"`
	Cgroup           string   `toml:"cgroup"`
	SudoPath         string   `toml:"sudo_path"`
	SecurePath       string   `toml:"secure_path"`
	UnprivilegedUser string   `toml:"unprivileged_user"`
	EnvAllow         []string `toml:"env_allow"`
	MaxClockSkew     duration `toml:"max_clock_skew"`
	ApprovalTimeout  duration `toml:"approval_timeout"`
	CommandTimeout   duration `toml:"command_timeout"`
	KillGrace        duration `toml:"kill_grace"`
	ReadTimeout      duration `toml:"read_timeout"`
	ShutdownTimeout  duration `toml:"shutdown_timeout"`
	SessionGrantTTL  duration `toml:"session_grant_ttl"`
	MaxConnections   int      `toml:"max_connections"`

	MaxConnectionsPerUser int       `toml:"max_connections_per_user"`
	RootConnections       int       `toml:"root_connections"`
	FirstByteTimeout      duration  `toml:"first_byte_timeout"`
	MaxRequestsPerMinute  int       `toml:"max_requests_per_minute"`
	Rule                  []ruleRaw `toml:"rule"`
}

// ruleRaw is the TOML shape of one [[rule]] table.
type ruleRaw struct {
	Name         string   `toml:"name"`
	Action       string   `toml:"action"`
	Match        []string `toml:"match"`
	Privileged   *bool    `toml:"privileged"`
	Session      string   `toml:"session"`
	User         string   `toml:"user"`
	UID          *int64   `toml:"uid"`
	Group        string   `toml:"group"`
	Env          []string `toml:"env"`
	ForwardAgent bool     `toml:"forward_agent"`
	Stdin        bool     `toml:"stdin"`
}

// duration is a time.Duration written in TOML as a string with a unit.
type duration time.Duration

// UnmarshalTOML implements toml.Unmarshaler. It accepts only strings, so
// that "approval_timeout = 300" is refused rather than read as 300ns.
func (d *duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("a duration must be a string with a unit, such as \"90s\" or \"5m\"; got %v (%T)", v, v)
	}
	p, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q (use a number with a unit, such as \"90s\", \"5m\" or \"1h30m\"): %w", s, err)
	}
	*d = duration(p)
	return nil
}

func fromConfig(c *Config) file {
	return file{
		Socket:           c.Socket,
		SocketGroup:      c.SocketGroup,
		AllowedUsers:     c.AllowedUsers,
		AllowedGroups:    c.AllowedGroups,
		ApproverSocket:   c.ApproverSocket,
		AuditLog:         c.AuditLog,
		AuditEnvValues:   c.AuditEnvValues,
		AuditStdin:       c.AuditStdin,
		Exec:             string(c.Exec),
		Cgroup:           string(c.Cgroup),
		SudoPath:         c.SudoPath,
		SecurePath:       c.SecurePath,
		UnprivilegedUser: c.UnprivilegedUser,
		EnvAllow:         c.EnvAllow,
		MaxClockSkew:     duration(c.MaxClockSkew),
		ApprovalTimeout:  duration(c.ApprovalTimeout),
		CommandTimeout:   duration(c.CommandTimeout),
		KillGrace:        duration(c.KillGrace),
		ReadTimeout:      duration(c.ReadTimeout),
		ShutdownTimeout:  duration(c.ShutdownTimeout),
		SessionGrantTTL:  duration(c.SessionGrantTTL),
		MaxConnections:   c.MaxConnections,

		MaxConnectionsPerUser: c.MaxConnectionsPerUser,
		RootConnections:       c.RootConnections,
		FirstByteTimeout:      duration(c.FirstByteTimeout),
		MaxRequestsPerMinute:  c.MaxRequestsPerMinute,
	}
}

func (f file) toConfig() (*Config, error) {
	c := &Config{
		Socket:           f.Socket,
		SocketGroup:      f.SocketGroup,
		AllowedUsers:     f.AllowedUsers,
		AllowedGroups:    f.AllowedGroups,
		ApproverSocket:   f.ApproverSocket,
		AuditLog:         f.AuditLog,
		AuditEnvValues:   f.AuditEnvValues,
		AuditStdin:       f.AuditStdin,
		Exec:             ExecMode(f.Exec),
		Cgroup:           CgroupMode(f.Cgroup),
		SudoPath:         f.SudoPath,
		SecurePath:       f.SecurePath,
		UnprivilegedUser: f.UnprivilegedUser,
		EnvAllow:         f.EnvAllow,
		MaxClockSkew:     time.Duration(f.MaxClockSkew),
		ApprovalTimeout:  time.Duration(f.ApprovalTimeout),
		CommandTimeout:   time.Duration(f.CommandTimeout),
		KillGrace:        time.Duration(f.KillGrace),
		ReadTimeout:      time.Duration(f.ReadTimeout),
		ShutdownTimeout:  time.Duration(f.ShutdownTimeout),
		SessionGrantTTL:  time.Duration(f.SessionGrantTTL),
		MaxConnections:   f.MaxConnections,

		MaxConnectionsPerUser: f.MaxConnectionsPerUser,
		RootConnections:       f.RootConnections,
		FirstByteTimeout:      time.Duration(f.FirstByteTimeout),
		MaxRequestsPerMinute:  f.MaxRequestsPerMinute,
	}
	var errs []error
	for i, r := range f.Rule {
		rule := rules.Rule{
			Name:         r.Name,
			Action:       rules.Action(r.Action),
			Match:        r.Match,
			Privileged:   r.Privileged,
			Session:      r.Session,
			User:         r.User,
			Group:        r.Group,
			Env:          r.Env,
			ForwardAgent: r.ForwardAgent,
			Stdin:        r.Stdin,
		}
		if r.UID != nil {
			if *r.UID < 0 || *r.UID >= 1<<32-1 {
				errs = append(errs, fmt.Errorf("%s: uid: %d is not a valid uid (0 to 4294967294)", ruleLabel(i, r.Name), *r.UID))
				continue
			}
			uid := uint32(*r.UID)
			rule.UID = &uid
		}
		c.Rules = append(c.Rules, rule)
	}
	return c, errors.Join(errs...)
}

// topKeys and ruleKeys are the known keys, for suggestions.
func topKeys() []string {
	return []string{
		"socket", "socket_group", "allowed_users", "allowed_groups", "approver_socket",
		"audit_log", "audit_env_values", "audit_stdin", "exec", "cgroup", "sudo_path", "secure_path",
		"unprivileged_user", "env_allow", "max_clock_skew", "approval_timeout",
		"command_timeout", "kill_grace", "read_timeout", "shutdown_timeout", "session_grant_ttl",
		"max_connections", "max_connections_per_user", "root_connections", "first_byte_timeout",
		"max_requests_per_minute", "rule",
	}
}

func ruleKeys() []string {
	return []string{"name", "action", "match", "privileged", "session", "user", "uid", "group", "env", "forward_agent", "stdin"}
}

// unknownKeys reports every key of the file that the configuration does not
// have. Keys inside [[rule]] tables are reported with the rule they are in.
func unknownKeys(data []byte, md toml.MetaData) error {
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
			msgs = append(msgs, unknownRuleKey(data, k[1:]))
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
// the rules that have it. The key path from MetaData does not say which
// array element it came from, so the file is decoded again generically.
func unknownRuleKey(data []byte, key toml.Key) string {
	var generic struct {
		Rule []map[string]any `toml:"rule"`
	}
	var where []string
	if _, err := toml.Decode(string(data), &generic); err == nil {
		for i, r := range generic.Rule {
			if _, ok := r[key[0]]; ok {
				where = append(where, ruleLabel(i, r["name"]))
			}
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
	case ExecSudo, ExecDirect:
	default:
		add("exec", "%q is not valid; it must be %q or %q", string(c.Exec), ExecSudo, ExecDirect)
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

	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"max_clock_skew", c.MaxClockSkew},
		{"approval_timeout", c.ApprovalTimeout},
		{"command_timeout", c.CommandTimeout},
		{"kill_grace", c.KillGrace},
		{"read_timeout", c.ReadTimeout},
		{"first_byte_timeout", c.FirstByteTimeout},
		{"shutdown_timeout", c.ShutdownTimeout},
		{"session_grant_ttl", c.SessionGrantTTL},
	} {
		if d.v <= 0 {
			add(d.key, "%q must be greater than zero", d.v.String())
		}
	}
	for _, n := range []struct {
		key string
		v   int
	}{
		{"max_connections", c.MaxConnections},
		{"max_connections_per_user", c.MaxConnectionsPerUser},
		{"root_connections", c.RootConnections},
		{"max_requests_per_minute", c.MaxRequestsPerMinute},
	} {
		if n.v <= 0 {
			add(n.key, "%d must be greater than zero", n.v)
		}
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
