// Package clienttest runs a fake agent-sudod on a temporary Unix socket, so
// that clients of the daemon can be tested in-process against scripted
// answers, broken ones included.
//
// A [Server] accepts connections until the test ends and hands each one to a
// [Handler] in its own goroutine. [Respond] answers with a well-formed
// response, [Reply] writes any bytes at all, and [Hang] never answers, for
// tests of cancellation.
package clienttest

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agent-sudo/agent-sudo/proto"
)

// Handler serves one connection. The server closes the connection when the
// handler returns.
type Handler func(c *Conn)

// Conn is one accepted connection as a Handler sees it.
type Conn struct {
	net.Conn
	// Done is closed when the test ends; a handler that waits must also
	// wait on it.
	Done <-chan struct{}

	srv *Server
}

// ReadRequest reads and decodes the request line with proto.ReadRequest, as
// the daemon would, and records the request for [Server.Requests].
func (c *Conn) ReadRequest() (*proto.Request, error) {
	req, err := proto.ReadRequest(c.Conn, proto.DecodeOptions{})
	if err == nil {
		c.srv.mu.Lock()
		c.srv.reqs = append(c.srv.reqs, req)
		c.srv.mu.Unlock()
	}
	return req, err
}

// Server is a fake daemon listening on Socket until the test ends.
type Server struct {
	// Socket is the path the server listens on.
	Socket string

	ln      *net.UnixListener
	handler Handler
	done    chan struct{}
	wg      sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	reqs  []*proto.Request
}

// NewServer starts a server that serves every connection with h. It stops
// when the test ends: it stops accepting, closes open connections and waits
// for the handlers to return.
func NewServer(tb testing.TB, h Handler) *Server {
	tb.Helper()
	// t.TempDir can exceed the 108 bytes a socket path may have.
	dir, err := os.MkdirTemp("", "agent-sudo-test-")
	if err != nil {
		tb.Fatalf("clienttest: create socket directory: %v", err)
	}
	s := &Server{
		Socket:  filepath.Join(dir, "d.sock"),
		handler: h,
		done:    make(chan struct{}),
		conns:   map[net.Conn]struct{}{},
	}
	s.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: s.Socket, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		tb.Fatalf("clienttest: listen on %s: %v", s.Socket, err)
	}
	tb.Cleanup(func() {
		s.close()
		os.RemoveAll(dir)
	})
	s.wg.Add(1)
	go s.serve()
	return s
}

// Requests returns the requests read so far with [Conn.ReadRequest], in the
// order they were read.
func (s *Server) Requests() []*proto.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*proto.Request(nil), s.reqs...)
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return // closed by close
		}
		s.mu.Lock()
		select {
		case <-s.done:
			s.mu.Unlock()
			conn.Close()
			return
		default:
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
				conn.Close()
			}()
			s.handler(&Conn{Conn: conn, Done: s.done, srv: s})
		}()
	}
}

func (s *Server) close() {
	s.mu.Lock()
	close(s.done)
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}

// Respond returns a Handler that reads the request and writes the response
// f returns for it with proto.WriteResponse; a nil response closes the
// connection without answering. A request that cannot be read is answered
// as the daemon would, with proto.ErrorResponse.
func Respond(f func(req *proto.Request) *proto.Response) Handler {
	return func(c *Conn) {
		var resp *proto.Response
		if req, err := c.ReadRequest(); err != nil {
			resp = proto.ErrorResponse(err)
		} else {
			resp = f(req)
		}
		if resp != nil {
			proto.WriteResponse(c, resp) // the client may be gone
		}
	}
}

// Answer returns a function for Respond that answers every request with
// resp, its id set to the request's.
func Answer(resp proto.Response) func(*proto.Request) *proto.Response {
	return func(req *proto.Request) *proto.Response {
		r := resp
		r.ID = req.ID
		return &r
	}
}

// Reply returns a Handler that reads the request and writes exactly the
// bytes f returns for it: no newline is added, and "" closes the connection
// without answering. req is nil if the request could not be read.
func Reply(f func(req *proto.Request) string) Handler {
	return func(c *Conn) {
		req, _ := c.ReadRequest()
		if line := f(req); line != "" {
			io.WriteString(c, line) // the client may be gone
		}
	}
}

// Hang returns a Handler that reads the request, sends it on got, and never
// answers: it waits until the client closes the connection and then sends on
// closed. Either channel may be nil; a send gives up when the test ends.
func Hang(got chan<- *proto.Request, closed chan<- struct{}) Handler {
	return func(c *Conn) {
		req, _ := c.ReadRequest()
		if got != nil {
			select {
			case got <- req:
			case <-c.Done:
				return
			}
		}
		io.Copy(io.Discard, c) // any error means the connection is over
		if closed != nil {
			select {
			case closed <- struct{}{}:
			case <-c.Done:
			}
		}
	}
}
