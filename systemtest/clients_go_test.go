package systemtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The Go clients' sessions (clientSession), each with the client's default
// options and, where it speaks both, RESP2 too.

const clientTimeout = 30 * time.Second

// testGoRedisSession runs the session with go-redis v9; the transaction is
// TxPipelined (MULTI ... EXEC).
func testGoRedisSession(t *testing.T, n *node, protocol int) {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	opts := &redis.Options{Addr: n.addr()}
	if protocol != 0 {
		opts.Protocol = protocol
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	s := newClientSession(fmt.Sprintf("go-redis-session-%d", protocol))
	conn := rdb.Conn() // one connection: "keeps working on the same connection"
	defer conn.Close()

	ints := func(what string, v interface{}, err error, want []int64) {
		t.Helper()
		got, ok := v.([]interface{})
		if err != nil || !ok || len(got) != len(want) {
			t.Errorf("%s = %#v, %v; want the integers %v", what, v, err, want)
			return
		}
		for i := range want {
			if x, ok := got[i].(int64); !ok || x != want[i] {
				t.Errorf("%s = %#v; want the integers %v", what, v, want)
				return
			}
		}
	}
	for i, cmd := range s.Plain {
		v, err := conn.Do(ctx, args(cmd)...).Result()
		ints(fmt.Sprint(cmd), v, err, s.wantPlain[i])
	}
	var cmds []*redis.Cmd
	if _, err := conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, cmd := range s.Tx {
			cmds = append(cmds, p.Do(ctx, args(cmd)...))
		}
		return nil
	}); err != nil {
		t.Fatalf("TxPipelined: %v", err)
	}
	for i, c := range cmds {
		v, err := c.Result()
		ints(fmt.Sprintf("MULTI/EXEC %d", i), v, err, s.wantTx[i])
	}
	before := conn.ClientID(ctx).Val()
	err := conn.Do(ctx, args(s.Bad)...).Err()
	var rerr redis.Error
	if !errors.As(err, &rerr) || err.Error() != s.wantErr {
		t.Errorf("%v: %v (%T), want redis.Error %q", s.Bad, err, err, s.wantErr)
	}
	if after := conn.ClientID(ctx).Val(); after != before || before == 0 {
		t.Errorf("the connection changed after the error: CLIENT ID %d, then %d", before, after)
	}
	for i, cmd := range s.After {
		v, err := conn.Do(ctx, args(cmd)...).Result()
		ints(fmt.Sprint(cmd), v, err, s.wantAfter[i])
	}
}

// testRueidis runs the session with rueidis: by default RESP3 with
// client-side caching on (it sends CLIENT TRACKING ON OPTIN on connect and
// caches through CLIENT CACHING YES + MULTI PTTL cmd EXEC), or RESP2 without
// caching, which RESP2 cannot do. As a standalone client (ForceSingleClient):
// Redcell speaks the Redis Cluster protocol, so rueidis would otherwise be a
// cluster client, which refuses the session's transaction across slots as it
// would against any Redis Cluster (its cluster path: TestClusterClients).
func testRueidis(t *testing.T, n *node, resp2 bool) {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	opt := rueidis.ClientOption{InitAddress: []string{n.addr()}, ForceSingleClient: true}
	prefix := "rueidis-resp3"
	if resp2 {
		opt.AlwaysRESP2, opt.DisableCache = true, true
		prefix = "rueidis-resp2"
	}
	client, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	defer client.Close()
	s := newClientSession(prefix)
	build := func(cmd []string) rueidis.Completed {
		return client.B().Arbitrary(cmd[0]).Keys(cmd[1]).Args(cmd[2:]...).Build()
	}
	ints := func(what string, r interface {
		ToArray() ([]rueidis.RedisMessage, error)
	}, want []int64) {
		t.Helper()
		arr, err := r.ToArray()
		if err != nil || len(arr) != len(want) {
			t.Errorf("%s = %v, %v; want the integers %v", what, arr, err, want)
			return
		}
		for i := range want {
			if !arr[i].IsInt64() {
				t.Errorf("%s element %d is not a RESP integer: %v", what, i, arr[i])
				return
			}
			if v, _ := arr[i].AsInt64(); v != want[i] {
				t.Errorf("%s = %v; want %v", what, arr, want)
				return
			}
		}
	}
	// The session on one connection (the client spreads plain commands over
	// several): a dedicated one.
	err = client.Dedicated(func(c rueidis.DedicatedClient) error {
		clientID := func() int64 {
			id, err := c.Do(ctx, c.B().ClientId().Build()).AsInt64()
			if err != nil {
				t.Fatalf("CLIENT ID: %v", err)
			}
			return id
		}
		for i, cmd := range s.Plain {
			ints(fmt.Sprint(cmd), c.Do(ctx, build(cmd)), s.wantPlain[i])
		}
		multi := rueidis.Commands{c.B().Multi().Build()}
		for _, cmd := range s.Tx {
			multi = append(multi, build(cmd))
		}
		multi = append(multi, c.B().Exec().Build())
		res := c.DoMulti(ctx, multi...)
		exec, err := res[len(res)-1].ToArray()
		if err != nil || len(exec) != len(s.wantTx) {
			return fmt.Errorf("EXEC = %v, %v", exec, err)
		}
		for i := range s.wantTx {
			ints(fmt.Sprintf("MULTI/EXEC %d", i), &exec[i], s.wantTx[i])
		}
		before := clientID()
		err = c.Do(ctx, build(s.Bad)).Error()
		if re, ok := rueidis.IsRedisErr(err); !ok || re.Error() != s.wantErr {
			t.Errorf("%v: %v (%T), want a *rueidis.RedisError %q", s.Bad, err, err, s.wantErr)
		}
		if after := clientID(); after != before {
			t.Errorf("the connection changed after the error: CLIENT ID %d, then %d", before, after)
		}
		for i, cmd := range s.After {
			ints(fmt.Sprint(cmd), c.Do(ctx, build(cmd)), s.wantAfter[i])
		}
		return nil
	})
	if err != nil {
		t.Fatalf("rueidis session: %v", err)
	}
	if !resp2 {
		testRueidisCache(ctx, t, n, client, prefix)
	}
}

// testRueidisCache: with rueidis's default client-side caching, a cached read
// is served from the cache until a write — on this client or another
// connection — invalidates it, and then reads the new value.
func testRueidisCache(ctx context.Context, t *testing.T, n *node, client rueidis.Client, prefix string) {
	for _, via := range []string{"the same client", "another connection"} {
		key := prefix + ":cached:" + via
		checkRueidisInvalidation(ctx, t, client, key, func() {
			write := []string{"CL.THROTTLE", key, "1", "1", "60"}
			if via == "the same client" {
				if err := client.Do(ctx, client.B().Arbitrary(write[0]).Keys(key).Args(write[2:]...).Build()).Error(); err != nil {
					t.Fatalf("%v: %v", write, err)
				}
				return
			}
			other := mustDial(t, n.addr())
			if r := mustDo(t, other, write...); r.isErr() {
				t.Fatalf("%v: %v", write, r)
			}
		})
	}
}

// checkRueidisInvalidation caches TYPE key through client (a miss, then a
// hit), calls write, which must write key and return once the node that
// client is connected to has applied the write, and requires the next cached
// TYPE to come from the server with the new value.
//
// No sleeping: rueidis sends a cached read of a key on one of its
// connections chosen by the key's slot, the node queues the invalidation on
// that connection when it applies the write, and writes it before its reply
// to anything sent there later; so a cached read of another key with the
// same slot (a hash tag of the key), sent after the write, returns only after
// rueidis has read the invalidation.
func checkRueidisInvalidation(ctx context.Context, t *testing.T, client rueidis.Client, key string, write func()) {
	t.Helper()
	cachedType := func(k string) (string, bool) {
		t.Helper()
		r := client.DoCache(ctx, client.B().Type().Key(k).Cache(), time.Minute)
		s, err := r.ToString()
		if err != nil {
			t.Fatalf("DoCache(TYPE %s): %v", k, err)
		}
		return s, r.IsCacheHit()
	}
	if got, hit := cachedType(key); got != "none" || hit {
		t.Errorf("first cached TYPE %s = %q (hit %v), want none from the server", key, got, hit)
	}
	if got, hit := cachedType(key); got != "none" || !hit {
		t.Errorf("second cached TYPE %s = %q (hit %v), want none from the cache", key, got, hit)
	}
	write()
	cachedType("{" + key + "}:sync") // same slot, same connection: after the push
	if got, hit := cachedType(key); got != "string" || hit {
		t.Errorf("cached TYPE %s after the write = %q (hit %v), want string from the server", key, got, hit)
	}
}

// testRedigo runs the session with redigo (RESP2 only); the transaction is
// Send(MULTI) … Do(EXEC).
func testRedigo(t *testing.T, n *node) {
	c, err := redigo.Dial("tcp", n.addr(), redigo.DialConnectTimeout(clientTimeout),
		redigo.DialReadTimeout(clientTimeout), redigo.DialWriteTimeout(clientTimeout))
	if err != nil {
		t.Fatalf("redigo.Dial: %v", err)
	}
	defer c.Close()
	s := newClientSession("redigo")
	ints := func(what string, v interface{}, err error, want []int64) {
		t.Helper()
		got, err := redigo.Values(v, err)
		if err != nil || len(got) != len(want) {
			t.Errorf("%s = %#v, %v; want the integers %v", what, v, err, want)
			return
		}
		for i := range want {
			if x, ok := got[i].(int64); !ok || x != want[i] {
				t.Errorf("%s = %#v; want the integers %v", what, got, want)
				return
			}
		}
	}
	for i, cmd := range s.Plain {
		v, err := c.Do(cmd[0], args(cmd[1:])...)
		ints(fmt.Sprint(cmd), v, err, s.wantPlain[i])
	}
	if err := c.Send("MULTI"); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range s.Tx {
		if err := c.Send(cmd[0], args(cmd[1:])...); err != nil {
			t.Fatal(err)
		}
	}
	exec, err := redigo.Values(c.Do("EXEC"))
	if err != nil || len(exec) != len(s.wantTx) {
		t.Fatalf("EXEC = %#v, %v", exec, err)
	}
	for i := range s.wantTx {
		ints(fmt.Sprintf("MULTI/EXEC %d", i), exec[i], nil, s.wantTx[i])
	}
	before, _ := redigo.Int64(c.Do("CLIENT", "ID"))
	_, err = c.Do(s.Bad[0], args(s.Bad[1:])...)
	var rerr redigo.Error
	if !errors.As(err, &rerr) || err.Error() != s.wantErr {
		t.Errorf("%v: %v (%T), want redigo's redis.Error %q", s.Bad, err, err, s.wantErr)
	}
	if after, _ := redigo.Int64(c.Do("CLIENT", "ID")); after != before || before == 0 {
		t.Errorf("the connection changed after the error: CLIENT ID %d, then %d", before, after)
	}
	for i, cmd := range s.After {
		v, err := c.Do(cmd[0], args(cmd[1:])...)
		ints(fmt.Sprint(cmd), v, err, s.wantAfter[i])
	}
}
