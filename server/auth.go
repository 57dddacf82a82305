package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"
	"sync/atomic"

	"github.com/redcell/redcell/commands"
)

// Authentication, as Redis 7 does it for its one user, "default": without a
// password (requirepass empty) the user has "nopass" and every connection
// starts authenticated; with one, a connection starts unauthenticated and
// must send AUTH [default] <password> or HELLO <proto> AUTH default
// <password>, and until then every command but those the table flags
// "no_auth" (AUTH, HELLO, QUIT, RESET) is answered NOAUTH, and its reader
// applies Redis's unauthenticated limits (reader.go).
//
// As in Redis, "authenticated" is a property of the connection fixed when it
// starts or authenticates: setting a password at runtime (CONFIG SET
// requirepass) does not log out the connections already open, so the
// connection that sets it keeps working; RESET logs a connection out when a
// password is set.
//
// The password is never compared as given: both sides are hashed with
// SHA-256 and the digests compared with crypto/subtle, so neither the time
// taken nor the result depends on where the inputs differ or on their
// lengths (Redis's ACL compares SHA-256 digests in constant time the same
// way).

// password is the configured requirepass: the text (CONFIG GET answers it,
// as Redis does) and its digest.
type password struct {
	text string
	sum  [sha256.Size]byte
}

// authState is the server's password; nil means none (the default user has
// nopass). Any goroutine may read or replace it.
type authState struct {
	pass atomic.Pointer[password]
}

// set replaces the password; "" removes it.
func (a *authState) set(text string) {
	if text == "" {
		a.pass.Store(nil)
		return
	}
	a.pass.Store(&password{text: text, sum: sha256.Sum256([]byte(text))})
}

// required reports whether a password is set.
func (a *authState) required() bool { return a.pass.Load() != nil }

// text is the password as configured ("" when none).
func (a *authState) text() string {
	if p := a.pass.Load(); p != nil {
		return p.text
	}
	return ""
}

// check is ACLAuthenticateUser for Redcell's one user: "default" with the
// configured password, or with any password while none is set. Every other
// user name is unknown, which Redis answers like a wrong password.
func (a *authState) check(user, pass []byte) bool {
	p := a.pass.Load()
	sum := sha256.Sum256(pass)
	if p == nil {
		return string(user) == "default"
	}
	ok := subtle.ConstantTimeCompare(sum[:], p.sum[:]) == 1
	return ok && string(user) == "default"
}

// SetRequirePass sets the password clients must give ("" for none), as
// CONFIG SET requirepass does. Connections already authenticated stay so.
func (s *Server) SetRequirePass(text string) { s.auth.set(text) }

// initAuth sets a new connection's state: authenticated when no password
// is set. Called once, before its goroutine starts.
func (c *conn) initAuth() {
	c.authed = !c.s.auth.required()
	c.rd.authRequired = c.authRequired
	c.rd.stopAfter = c.authMayChange
}

// authMayChange tells the reader to stop after a command that may change
// whether the next one is read under the unauthenticated limits: any
// command while the connection must authenticate (it may be AUTH or HELLO),
// and RESET while a password is set (it logs out). Redis executes each
// command before it reads the next; stopping only here keeps pipelines of
// authenticated clients in one batch.
func (c *conn) authMayChange(args [][]byte) bool {
	return c.authRequired() || (c.s.auth.required() && commands.EqualFold(args[0], "reset"))
}

// authRequired is Redis's authRequired(c): a password is set and this
// connection has not given it. Only the connection's goroutine calls it.
func (c *conn) authRequired() bool { return !c.authed && c.s.auth.required() }

// authError is what exec answers instead of running the command on a
// connection that must authenticate first, or "" to run it: commands
// flagged "no_auth" run; the others get NOAUTH. As in Redis, an unknown
// subcommand and a subcommand's wrong number of arguments are answered with
// their own errors first (exec has checked the command and its arity); they
// are answered here, so that no handler runs for an unauthenticated client.
func (c *conn) authError(spec *commands.Spec, args [][]byte) string {
	if !c.authRequired() || spec.HasFlag("no_auth") {
		return ""
	}
	if e := subcommandError(spec, args); e != "" {
		return e
	}
	return commands.ErrNoAuth
}

// subcommandError is Redis's refusal of a container command's unknown
// subcommand or of a subcommand's wrong number of arguments, or "": what
// Redis checks with the command and its arity, before authentication and
// before queueing inside MULTI (the handlers check the same when they run).
func subcommandError(spec *commands.Spec, args [][]byte) string {
	if len(spec.Subs) == 0 || len(args) < 2 {
		return ""
	}
	sub := spec.Sub(args[1])
	if sub == nil {
		return commands.UnknownSubcommand(args[1], strings.ToUpper(spec.Name))
	}
	if !sub.CheckArity(len(args)) {
		return commands.WrongArgs(sub.Name)
	}
	return ""
}

// AUTH [username] password
// Authenticates the connection as the default user (Redcell's only user).
func cmdAuth(c *conn, _ *commands.Spec, args [][]byte) {
	var user, pass []byte
	switch len(args) {
	case 2:
		if !c.s.auth.required() {
			c.fail(commands.ErrAuthNoPass)
			return
		}
		user, pass = []byte("default"), args[1]
	case 3:
		user, pass = args[1], args[2]
	default:
		c.fail(commands.ErrSyntax)
		return
	}
	if !c.s.auth.check(user, pass) {
		// A failed AUTH leaves the connection as it was, authenticated or
		// not, as in Redis.
		c.fail(commands.ErrWrongPass)
		return
	}
	c.authed = true
	c.w.OK()
}
