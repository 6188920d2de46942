package proto

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// envLine returns a request line whose env is env.
func envLine(t *testing.T, env map[string]string) []byte {
	t.Helper()
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"id":"x",` + okTime + `,"pipeline":[["a"]],"env":` + string(b) + "}\n")
}

// TestDecodeRequestEnvLimits checks the env limits of this daemon (issue
// 10, M5): at most MaxEnvVars variables, names of at most MaxEnvNameLen
// bytes, names and values of at most MaxEnvBytes together; each refusal is
// precise, and the limits themselves are accepted.
func TestDecodeRequestEnvLimits(t *testing.T) {
	vars := func(n int) map[string]string {
		env := map[string]string{}
		for i := range n {
			env[fmt.Sprintf("V%03d", i)] = "x"
		}
		return env
	}
	// 64 variables of V%03d (4 bytes) with values filling the rest exactly.
	full := vars(MaxEnvVars)
	full["V000"] = strings.Repeat("x", MaxEnvBytes-MaxEnvVars*5+1)
	over := vars(MaxEnvVars)
	over["V000"] = strings.Repeat("x", MaxEnvBytes-MaxEnvVars*5+2)
	tests := []struct {
		name string
		env  map[string]string
		want string // "" means accepted
	}{
		{"at the variable limit", vars(MaxEnvVars), ""},
		{"over the variable limit", vars(MaxEnvVars + 1), `invalid request: field "env": has more than 64 variables; this daemon accepts at most 64`},
		{"far over the variable limit", vars(10_000), `invalid request: field "env": has more than 64 variables`},
		{"name at the length limit", map[string]string{"N" + strings.Repeat("a", MaxEnvNameLen-1): ""}, ""},
		{"name over the length limit", map[string]string{"N" + strings.Repeat("a", MaxEnvNameLen): ""}, `invalid request: field "env": a variable name is 257 bytes long; this daemon accepts names of at most 256 bytes`},
		{"bytes at the limit", full, ""},
		{"bytes over the limit", over, `invalid request: field "env": names and values total more than 32768 bytes; this daemon accepts at most 32768`},
		{"one huge value", map[string]string{"A": strings.Repeat("x", MaxEnvBytes)}, `names and values total more than 32768 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := DecodeRequest(envLine(t, tt.env), testOpts)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(req.Env) != len(tt.env) {
					t.Fatalf("decoded %d variables, want %d", len(req.Env), len(tt.env))
				}
				return
			}
			var re *RequestError
			if !errors.As(err, &re) || re.ID != "x" || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a *RequestError for id x containing %q", err, tt.want)
			}
			if len(err.Error()) > 200 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}
