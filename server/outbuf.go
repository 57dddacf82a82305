package server

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/internal/arg"
)

// client-output-buffer-limit for normal clients.
//
// A connection writes a pipeline's replies before it reads the next, so a
// client that never reads holds at most one pipeline's replies in the node
// (its socket full, the connection goroutine blocked in its write): memory
// stays bounded with no limit at all, which is Redis's default for normal
// clients ("normal 0 0 0"). Set, the limit disconnects such a client, as
// Redis does: at once when a pipeline's replies exceed the hard limit, and,
// when a soft limit is set, once a write of its replies has stalled for the
// soft seconds. (Redis waits for its output buffer to stay above the soft
// limit that long; Redcell's never grows past one pipeline's replies,
// because it stops reading from a client it cannot write to, so the stall
// itself is the signal.) The soft limit is enforced with a write deadline. The replica and pubsub classes
// are reported for compatibility; tracking pushes have their own bound
// (tracking.go).

// outputLimit is one class's "<hard> <soft> <soft-seconds>".
type outputLimit struct{ hard, soft, softSeconds int64 }

// outputLimits are the classes CONFIG reports, in Redis's order.
type outputLimits struct{ normal, replica, pubsub outputLimit }

// defaultOutputLimits are Redis 7's defaults.
var defaultOutputLimits = outputLimits{
	replica: outputLimit{256 << 20, 64 << 20, 60},
	pubsub:  outputLimit{32 << 20, 8 << 20, 60},
}

// errOutputLimit: the client overcame its output buffer limit and is closed
// without a reply.
var errOutputLimit = errors.New("client overcame its output buffer limit")

func (l outputLimits) String() string {
	f := func(name string, o outputLimit) string {
		return name + " " + strconv.FormatInt(o.hard, 10) + " " + strconv.FormatInt(o.soft, 10) + " " + strconv.FormatInt(o.softSeconds, 10)
	}
	return f("normal", l.normal) + " " + f("replica", l.replica) + " " + f("pubsub", l.pubsub)
}

// parseOutputLimits applies CONFIG SET's value (groups of "<class> <hard>
// <soft> <seconds>") to cur; reason is Redis's text when it is invalid.
func parseOutputLimits(cur outputLimits, v string) (outputLimits, string) {
	f := strings.Fields(v)
	if len(f) == 0 || len(f)%4 != 0 {
		return cur, "Wrong number of arguments in buffer limit configuration."
	}
	for i := 0; i < len(f); i += 4 {
		hard, ok1 := arg.Memory(f[i+1])
		soft, ok2 := arg.Memory(f[i+2])
		secs, err := strconv.ParseInt(f[i+3], 10, 64)
		if !ok1 || !ok2 || err != nil || secs < 0 {
			return cur, "Error in hard, soft or soft_seconds setting in buffer limit configuration."
		}
		o := outputLimit{hard, soft, secs}
		switch strings.ToLower(f[i]) {
		case "normal":
			cur.normal = o
		case "replica", "slave":
			cur.replica = o
		case "pubsub":
			cur.pubsub = o
		default:
			return cur, "Invalid client class specified in buffer limit configuration."
		}
	}
	return cur, ""
}

// writeReplies writes b, enforcing the normal class's limit; with none set
// it is one plain write.
func (c *conn) writeReplies(b []byte) (int, error) {
	lim := c.s.params.outLimits.Load().normal
	if lim.hard == 0 && (lim.soft == 0 || lim.softSeconds == 0) {
		return c.nc.Write(b)
	}
	if lim.hard > 0 && int64(len(b)) > lim.hard {
		return 0, errOutputLimit
	}
	written := 0
	for written < len(b) {
		// The node stops reading from a client whose replies it cannot
		// write, so the unwritten replies never grow past one pipeline's
		// and Redis's "above soft for soft_seconds" cannot be waited for:
		// a write that stalls for soft_seconds is that client.
		stallable := lim.soft > 0 && lim.softSeconds > 0
		if stallable && !c.s.closing.Load() {
			_ = c.nc.SetWriteDeadline(time.Now().Add(time.Duration(lim.softSeconds) * time.Second))
		}
		n, err := c.nc.Write(b[written:])
		written += n
		if stallable && !c.s.closing.Load() {
			_ = c.nc.SetWriteDeadline(time.Time{})
		}
		if err != nil {
			var ne net.Error
			if stallable && errors.As(err, &ne) && ne.Timeout() && !c.s.closing.Load() {
				return written, errOutputLimit // stalled for soft_seconds
			}
			return written, err
		}
	}
	return written, nil
}
