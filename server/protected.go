package server

import (
	"io"
	"net"
	"time"
)

// errProtectedMode is Redis 7's answer to a client refused by protected
// mode, byte for byte (networking.c, clientAcceptHandler).
const errProtectedMode = "-DENIED Redis is running in protected mode because protected " +
	"mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers to Redis you " +
	"may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command " +
	"'CONFIG SET protected-mode no' from the loopback interface " +
	"by connecting to Redis from the same host the server is " +
	"running, however MAKE SURE Redis is not publicly accessible " +
	"from internet if you do so. Use CONFIG REWRITE to make this " +
	"change permanent. " +
	"2) Alternatively you can just disable the protected mode by " +
	"editing the Redis configuration file, and setting the protected " +
	"mode option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart " +
	"it with the '--protected-mode no' option. " +
	"4) Set up an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for " +
	"the server to start accepting connections from the outside.\r\n"

// protectedRefuses reports whether protected mode turns nc away: as in
// Redis 7, when protected mode is on and no password is set, only clients
// on the loopback interface are served, whatever the node is bound to. It
// is judged when the connection is accepted, as Redis does: a password set
// later does not reach back to connections already refused.
func (s *Server) protectedRefuses(nc net.Conn) bool {
	if !s.params.protectedMode.Load() || s.auth.required() {
		return false
	}
	return !isLoopback(nc.RemoteAddr())
}

// isLoopback is Redis's connIsLocal for TCP: 127.0.0.0/8 or ::1.
func isLoopback(a net.Addr) bool {
	var ip net.IP
	switch v := a.(type) {
	case *net.TCPAddr:
		ip = v.IP
	default:
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return false
		}
		ip = net.ParseIP(host)
	}
	return ip != nil && ip.IsLoopback()
}

// deny answers a connection refused by protected mode as Redis does, counts
// it as a rejected connection, and closes it. It runs in a goroutine of its
// own (at most a second), so the accept loop is never held up.
//
// The client has usually sent its first command (HELLO, PING) by now.
// Closing a socket with unread input makes the kernel send a reset, which
// can destroy the explanation before the client reads it (go-redis then
// saw a bare EOF); so the node half-closes after the answer and reads what
// the client sends until it closes too, or a second has passed.
func (s *Server) deny(nc net.Conn) {
	s.stats.rejected.Add(1)
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	_, _ = nc.Write([]byte(errProtectedMode))
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(nc, 64<<10))
	nc.Close()
}
