package passkeytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// SessionHeader is web.SessionHeader, the header that carries the web
// approver's session, which this package cannot import (internal/web's
// own tests import this one); internal/web: TestSessionHeaderOfTheTests
// holds the two together.
const SessionHeader = "Agent-Sudo-Session"

// SessionClient returns an HTTP client that signs in as the web
// approver's page script does: it keeps the session token a sign-in
// (/api/login/finish) answers with and sends it in SessionHeader, and
// keeps no cookie (the web approver sets none). timeout is the client's
// (0: none).
func SessionClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: &sessionTransport{}, Timeout: timeout}
}

// sessionTransport is SessionClient's.
type sessionTransport struct {
	mu    sync.Mutex
	token string
}

func (s *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	s.mu.Lock()
	if s.token != "" {
		req.Header.Set(SessionHeader, s.token)
	}
	s.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.URL.Path != "/api/login/finish" || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var out struct {
		Session string `json:"session"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Session == "" {
		return nil, fmt.Errorf("sign-in answered %q, without a session", b)
	}
	s.mu.Lock()
	s.token = out.Session
	s.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}
