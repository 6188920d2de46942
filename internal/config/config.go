package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/fsperm"
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
