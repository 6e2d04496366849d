package remote

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// pipeConn is a net.Conn over a byte pipe: the agent's stdin and stdout
// under `ssh host zcprof serve --stdio`, or the client's end of that ssh
// process. Deadlines are not supported (gRPC uses its own timers).
type pipeConn struct {
	r     io.ReadCloser
	w     io.WriteCloser
	close func() error
	once  sync.Once
	err   error
}

func newPipeConn(r io.ReadCloser, w io.WriteCloser, closeFn func() error) *pipeConn {
	return &pipeConn{r: r, w: w, close: closeFn}
}

func (c *pipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }

func (c *pipeConn) Close() error {
	c.once.Do(func() {
		c.err = errors.Join(c.w.Close(), c.r.Close())
		if c.close != nil {
			c.err = errors.Join(c.err, c.close())
		}
	})
	return c.err
}

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

func (c *pipeConn) LocalAddr() net.Addr              { return pipeAddr("stdio") }
func (c *pipeConn) RemoteAddr() net.Addr             { return pipeAddr("stdio") }
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener hands out one connection, then blocks until closed: the
// agent under --stdio serves exactly the client at the pipe's other end.
type oneConnListener struct {
	conn   chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{conn: make(chan net.Conn, 1), closed: make(chan struct{})}
	l.conn <- c
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conn:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return pipeAddr("stdio") }
