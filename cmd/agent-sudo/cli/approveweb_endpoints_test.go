package cli

import "testing"

// TestWebEndpoints: where the web approver listens and the origin the
// browser sees, as the browser writes it (no default port), for each
// --web and --origin.
func TestWebEndpoints(t *testing.T) {
	for _, tc := range []struct {
		o                    webOpts
		listen, origin, rpID string
		err                  bool
	}{
		{o: webOpts{addr: "build-01.example:443"}, listen: "build-01.example:443", origin: "https://build-01.example", rpID: "build-01.example"},
		{o: webOpts{addr: "localhost:8443"}, listen: "localhost:8443", origin: "https://localhost:8443", rpID: "localhost"},
		{o: webOpts{addr: "127.0.0.1:8080", noTLS: true, origin: "http://localhost:8080"}, listen: "127.0.0.1:8080", origin: "http://localhost:8080", rpID: "localhost"},
		{o: webOpts{addr: "127.0.0.1:8443", origin: "https://Phone.Tailnet.ts.net:443/"}, listen: "127.0.0.1:8443", origin: "https://phone.tailnet.ts.net", rpID: "phone.tailnet.ts.net"},
		{o: webOpts{addr: "0.0.0.0:8443"}, err: true},                  // an IP address is no relying party
		{o: webOpts{addr: "example.org:8080", noTLS: true}, err: true}, // plain HTTP off loopback
		{o: webOpts{addr: "localhost:http"}, err: true},
		{o: webOpts{addr: "localhost:8443", origin: "https://localhost/path"}, err: true},
		// What the origin would drop: refused, as enroll's --for refuses it.
		{o: webOpts{addr: "localhost:8443", origin: "https://u@localhost:8443"}, err: true},
		{o: webOpts{addr: "localhost:8443", origin: "https://localhost:8443?x=1"}, err: true},
		{o: webOpts{addr: "localhost:8443", origin: "https://localhost:8443#x"}, err: true},
	} {
		listen, origin, rpID, err := tc.o.endpoints()
		if tc.err {
			if err == nil {
				t.Errorf("%+v: %s %s %s, want an error", tc.o, listen, origin, rpID)
			}
			continue
		}
		if err != nil || listen != tc.listen || origin != tc.origin || rpID != tc.rpID {
			t.Errorf("%+v: %q %q %q %v, want %q %q %q", tc.o, listen, origin, rpID, err, tc.listen, tc.origin, tc.rpID)
		}
	}
}
