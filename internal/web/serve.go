package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ServeConfig is what Serve needs once the daemons' channels are open.
type ServeConfig struct {
	// Daemons are the daemons served, their channels signed-only.
	Daemons []Daemon
	// Host and Port are where to listen (Listen: every address of Host,
	// a port only root may take).
	Host string
	Port uint16
	// Origin is the page's origin as the browser sees it, and RPID the
	// passkeys' relying party id.
	Origin, RPID string
	// Cert returns the TLS certificate and its fingerprint; nil serves
	// plain HTTP (a loopback address, which the caller checked).
	Cert func() (tls.Certificate, string, error)
	// UID and GID are the user served as, never root: Serve drops to them
	// after it has listened and read the certificate, before it reads a
	// byte from the network.
	UID, GID uint32
	// BeforeDrop runs as root right before the drop (the caller's relay of
	// a terminal's output); nil does nothing.
	BeforeDrop func() error
	// Ready is told the certificate's fingerprint ("" without TLS) once
	// the web approver serves.
	Ready func(fingerprint string)
	// Log receives what happens; nil discards it.
	Log *slog.Logger
}

// ErrNoDaemonLeft wraps Serve's error when every daemon's channel ended:
// the web approver, which cannot connect again once it has dropped root,
// has nothing left to serve (its service starts it again).
var ErrNoDaemonLeft = errors.New("lost every agent-sudod")

// ErrUnavailable is matched (errors.Is) by Serve's error when it could
// not listen or read the certificate: nothing was served. The error's
// text is the cause's alone.
var ErrUnavailable = errors.New("web approver unavailable")

type unavailable struct{ err error }

func (u unavailable) Error() string        { return u.err.Error() }
func (u unavailable) Unwrap() error        { return u.err }
func (u unavailable) Is(target error) bool { return target == ErrUnavailable }

// Serve is the web approver once its daemons' channels are open: it
// listens, wraps the listeners in TLS, drops to cfg.UID and cfg.GID, and
// serves the page and reads the daemons' channels until ctx ends (its
// error), every daemon's channel ended (ErrNoDaemonLeft) or serving
// failed. It fails with ErrUnavailable when it could not listen or read
// the certificate.
func Serve(ctx context.Context, cfg ServeConfig) error {
	if cfg.UID == 0 {
		return errors.New("refusing to serve as root")
	}
	lns, err := Listen(ctx, cfg.Host, cfg.Port)
	if err != nil {
		return unavailable{err}
	}
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	fp := ""
	if cfg.Cert != nil {
		cert, f, err := cfg.Cert()
		if err != nil {
			return unavailable{err}
		}
		tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		for i, ln := range lns {
			lns[i] = tls.NewListener(ln, tc)
		}
		fp = f
	}
	if cfg.BeforeDrop != nil {
		if err := cfg.BeforeDrop(); err != nil {
			return err
		}
	}
	if err := DropPrivileges(cfg.UID, cfg.GID); err != nil {
		return err
	}
	srv, err := New(Config{Daemons: cfg.Daemons, Origin: cfg.Origin, RPID: cfg.RPID, Log: cfg.Log})
	if err != nil {
		return err
	}
	if cfg.Ready != nil {
		cfg.Ready(fp)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	feedErr := make(chan error, 1)
	go func() { feedErr <- srv.Run(ctx) }()
	httpErr := make(chan error, 1)
	go func() { httpErr <- ServeHTTP(ctx, lns, srv.Handler()) }()
	select {
	case err = <-feedErr:
		cancel()
		<-httpErr
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrNoDaemonLeft, err)
	case err = <-httpErr:
		cancel()
		<-feedErr
		return err
	}
}

// ServeHTTP serves h on every listener of lns until ctx ends (its error),
// or one of them fails.
func ServeHTTP(ctx context.Context, lns []net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10,
		ErrorLog: nil}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- srv.Serve(ln) }()
	}
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return ctx.Err()
	case err := <-errc:
		_ = srv.Close()
		return err
	}
}
