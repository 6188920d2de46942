package passkey_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
)

// FuzzPasskeyFile: a passkey file that List takes (read strictly, its inner
// name checked against its file name) holds alice's passkey and reads back
// the same once written again, so that nothing in it has two readings.
func FuzzPasskeyFile(f *testing.F) {
	k, err := passkeytest.New("alice", "localhost", "https://localhost:8443")
	if err != nil {
		f.Fatal(err)
	}
	en, err := k.Enrolled()
	if err != nil {
		f.Fatal(err)
	}
	good, err := json.Marshal(en)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"name":"alice","name":"bob"}`))
	f.Add([]byte(`{"name":"alice","NAME":"bob","credential":{"id":"AQ==","publicKey":"Ag=="}}`))
	f.Add([]byte(`{"name":"alice","credential":{"id":"AR==","publicKey":"Ag=="}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := passkeytest.Dir(t)
		if err := os.WriteFile(filepath.Join(dir, "alice.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		keys, err := passkey.Store{Dir: dir}.List(false)
		if err != nil {
			return
		}
		if len(keys) != 1 || keys[0].Name != "alice" {
			t.Fatalf("alice.json holding %q listed as %+v", b, keys)
		}
		out, err := json.Marshal(keys[0])
		if err != nil {
			t.Fatalf("took %q, which cannot be written back: %v", b, err)
		}
		if err := os.WriteFile(filepath.Join(dir, "alice.json"), out, 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := passkey.Store{Dir: dir}.List(false)
		if err != nil || len(again) != 1 || !reflect.DeepEqual(passkey.Public(again[0]), passkey.Public(keys[0])) || again[0].Person != keys[0].Person {
			t.Fatalf("took %q, which reads back as %+v (%v)", b, again, err)
		}
	})
}
