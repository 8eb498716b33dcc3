package harness

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Servers are the loopback HTTP servers of one part of a run (a proxy's
// listeners, one per instance), started one by one as instances come and
// stopped together.
type Servers struct {
	mu   sync.Mutex
	srvs []*http.Server
}

// Listen serves h on a free loopback port and returns its address
// (127.0.0.1:port).
func (s *Servers) Listen(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srvs = append(s.srvs, srv)
	s.mu.Unlock()
	go srv.Serve(ln)
	return ln.Addr().String(), nil
}

// Close stops every server started so far.
func (s *Servers) Close() {
	s.mu.Lock()
	srvs := s.srvs
	s.srvs = nil
	s.mu.Unlock()
	for _, srv := range srvs {
		srv.Close()
	}
}
