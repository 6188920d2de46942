package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

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
