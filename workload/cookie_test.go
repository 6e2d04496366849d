package workload

import (
	"testing"
)

// TestSocketCookies: every worker exposes its socket's cookie; they are
// distinct (the sender's and the receiver's sockets of a stream are two
// sockets) and stable (asking again returns the same id).
func TestSocketCookies(t *testing.T) {
	requireRoot(t)
	cfg := defaults(MethodWrite, RxRead)
	cfg.Streams = 2
	tr, err := Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	seen := map[uint64]bool{}
	for _, th := range tr.Threads() {
		if th.Cookie == 0 || seen[th.Cookie] {
			t.Errorf("%s %d: cookie %d (zero or duplicate)", th.Role, th.Stream, th.Cookie)
		}
		seen[th.Cookie] = true
	}
	for _, w := range tr.workers {
		w.mu.Lock()
		c, err := socketCookie(w.fd)
		w.mu.Unlock()
		if err != nil || c != w.Cookie {
			t.Errorf("%s %d: SO_COOKIE again = %d, %v; want %d", w.Role, w.Stream, c, err, w.Cookie)
		}
	}
}
