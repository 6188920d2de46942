package account_test

import (
	"errors"
	"os/user"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/account"
)

func TestParseID(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"0", 0, true}, {"1000", 1000, true}, {"007", 7, true},
		{"4294967294", 4294967294, true},
		{"4294967295", 0, false}, // (uid_t)-1
		{"4294967296", 0, false}, {"99999999999", 0, false},
		{"", 0, false}, {"-1", 0, false}, {"+1", 0, false}, {" 1", 0, false},
		{"1 ", 0, false}, {"0x10", 0, false}, {"1_000", 0, false}, {"١", 0, false},
	}
	for _, tt := range tests {
		got, err := account.ParseID(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseID(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "is not a numeric id (0 to 4294967294)") {
			t.Errorf("ParseID(%q): error %q does not give the range", tt.in, err)
		}
	}
}

func TestUIDAndGID(t *testing.T) {
	if id, err := account.UID("12345"); err != nil || id != 12345 {
		t.Errorf("UID(12345) = %d, %v; want 12345 without a lookup", id, err)
	}
	if id, err := account.GID("54321"); err != nil || id != 54321 {
		t.Errorf("GID(54321) = %d, %v; want 54321 without a lookup", id, err)
	}
	if id, err := account.UID("root"); err != nil || id != 0 {
		t.Errorf("UID(root) = %d, %v; want 0", id, err)
	}
	if id, err := account.GID("root"); err != nil || id != 0 {
		t.Errorf("GID(root) = %d, %v; want 0", id, err)
	}
	_, err := account.UID("no-such-user-agent-sudo")
	if !errors.As(err, new(user.UnknownUserError)) {
		t.Errorf("UID of a user that does not exist: %v, want a user.UnknownUserError", err)
	}
	_, err = account.GID("no-such-group-agent-sudo")
	if !errors.As(err, new(user.UnknownGroupError)) {
		t.Errorf("GID of a group that does not exist: %v, want a user.UnknownGroupError", err)
	}
}
