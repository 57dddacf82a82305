package server

import (
	"github.com/redcell/redcell/commands"
)

// clientTypes are the client types Redis knows (getClientTypeByName). Every
// Redcell client is "normal": there are no replicas, masters or pub/sub
// clients, so a filter on another type matches none.
var clientTypes = map[string]bool{"normal": true, "master": false, "replica": false, "slave": false, "pubsub": false}

// clientType checks a TYPE argument: whether it names a known type, and
// whether Redcell's clients are of it.
func clientType(b []byte) (known, normal bool) {
	for name, isNormal := range clientTypes {
		if commands.EqualFold(b, name) {
			return true, isNormal
		}
	}
	return false, false
}

// CLIENT KILL <ip:port> | <[ID client-id] [TYPE type] [USER username]
// [ADDR ip:port] [LADDR ip:port] [SKIPME yes|no] ...>
// Closes the matching connections. The old form names one address and
// answers +OK or "No such client"; the new form combines filters (all must
// match), skips the caller unless SKIPME no, and answers how many it closed.
// A connection closed by another is closed at once and leaves the client
// table at once, as Redis frees it: a later CLIENT LIST or KILL no longer sees
// it, although its goroutine may still be on its way out (and a connection
// two concurrent KILLs match is counted by one). The caller, when it
// matches, gets its reply first.
func clientKill(c *conn, args [][]byte) {
	var (
		addr, laddr []byte
		id          int64
		typeNormal  = true
		skipMe      = true
	)
	oldForm := len(args) == 3
	if oldForm {
		addr, skipMe = args[2], false // the old form may kill the caller
	} else {
		for i := 2; i < len(args); i += 2 {
			if i+1 >= len(args) {
				c.fail(commands.ErrSyntax)
				return
			}
			opt, val := args[i], args[i+1]
			switch {
			case commands.EqualFold(opt, "id"):
				n, ok := string2ll(val)
				if !ok || n < 1 {
					c.fail("ERR client-id should be greater than 0")
					return
				}
				id = n
			case commands.EqualFold(opt, "type"):
				known, normal := clientType(val)
				if !known {
					c.fail("ERR Unknown client type '" + commands.SanitizeErrorText(val) + "'")
					return
				}
				typeNormal = typeNormal && normal
			case commands.EqualFold(opt, "addr"):
				addr = val
			case commands.EqualFold(opt, "laddr"):
				laddr = val
			case commands.EqualFold(opt, "user"):
				if string(val) != "default" {
					c.fail("ERR No such user '" + commands.SanitizeErrorText(val) + "'")
					return
				}
			case commands.EqualFold(opt, "skipme"):
				switch {
				case commands.EqualFold(val, "yes"):
					skipMe = true
				case commands.EqualFold(val, "no"):
					skipMe = false
				default:
					c.fail(commands.ErrSyntax)
					return
				}
			default:
				c.fail(commands.ErrSyntax)
				return
			}
		}
	}
	killed, self := 0, false
	c.s.forEachConn(func(o *conn) {
		switch {
		case !typeNormal,
			addr != nil && string(addr) != o.addr,
			laddr != nil && string(laddr) != o.laddr,
			id != 0 && id != o.id,
			o == c && skipMe:
			return
		}
		if o == c {
			killed++
			self = true
			return
		}
		if !c.s.forget(o) {
			return // gone meanwhile: closed by itself or by another KILL
		}
		killed++
		c.s.log.Debug("CLIENT KILL", "id", o.id, "addr", o.addr, "by", c.id)
		o.nc.Close()
	})
	if oldForm {
		if killed == 0 {
			c.fail("ERR No such client")
			return
		}
		c.w.OK()
	} else {
		c.w.Int(int64(killed))
	}
	if self {
		c.closeAfter = true
	}
}
