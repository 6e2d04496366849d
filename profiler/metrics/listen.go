package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Address completes --metrics: a port alone (":9464") binds to loopback;
// any other host, 0.0.0.0 included, must be given explicitly.
func Address(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--metrics %q: want [HOST]:PORT, e.g. :9464 or 0.0.0.0:9464", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Listen binds the address (see Address) at once, so that a port in use
// is one line and a non-zero exit before anything is attached.
func Listen(addr string) (net.Listener, error) {
	a, err := Address(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("--metrics %s: address already in use", a)
	case err != nil:
		return nil, fmt.Errorf("--metrics %s: %v", a, errors.Unwrap(err))
	}
	return ln, nil
}

// Serve serves h on ln until ctx ends, then shuts the server down.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-done
		return nil
	case err := <-done:
		return err
	}
}
