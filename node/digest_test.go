package node

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcell/redcell/slots"
)

// RAFT DIGEST names the group it hashes: each group's answer is that
// group's own applied index and state digest, a write changes only its
// key's group's digest, no group named is group 0, and a group the node
// does not run is an error. Replicas are compared group by group with it
// (systemtest's compareReplicas): group 0's digest alone says nothing of
// the others' keys.
func TestDigestOfEachGroup(t *testing.T) {
	const groups = 3
	n := mustOpen(t, t.TempDir(), func(c *Config) { c.Groups = groups })
	defer mustClose(t, n)
	waitCond(t, 10*time.Second, "every group to lead", func() bool {
		for _, lg := range n.groups {
			if !lg.group.Ready() {
				return false
			}
		}
		return true
	})
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr.String(), Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	digests := func() []string {
		t.Helper()
		out := make([]string, groups)
		for g := range groups {
			v, err := rdb.Do(ctx, "RAFT", "DIGEST", g).Slice()
			if err != nil || len(v) != 2 {
				t.Fatalf("RAFT DIGEST %d: %v %v", g, v, err)
			}
			out[g] = fmt.Sprint(v[0], " ", v[1])
			idx, sum, err := n.groups[g].fsm.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprint(idx, " ", hex.EncodeToString(sum[:])); out[g] != want {
				t.Errorf("RAFT DIGEST %d = %s, want group %d's own %s", g, out[g], g, want)
			}
		}
		return out
	}

	// A key of group 1 (slots 5461-10922 of three groups).
	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprintf("digest:%d", i); slots.KeySlotString(k)*groups/slots.Count == 1 {
			key = k
		}
	}
	before := digests()
	if err := rdb.Do(ctx, "CL.THROTTLE", key, "9", "1", "86400").Err(); err != nil {
		t.Fatal(err)
	}
	after := digests()
	for g := range groups {
		if changed := before[g] != after[g]; changed != (g == 1) {
			t.Errorf("a write to group 1: group %d's digest changed %v (%s → %s)", g, changed, before[g], after[g])
		}
	}
	plain, err := rdb.Do(ctx, "RAFT", "DIGEST").Slice()
	if err != nil || fmt.Sprint(plain[0], " ", plain[1]) != after[0] {
		t.Errorf("RAFT DIGEST with no group = %v %v, want group 0's %s", plain, err, after[0])
	}
	for _, bad := range []string{"3", "-1", "x"} {
		err := rdb.Do(ctx, "RAFT", "DIGEST", bad).Err()
		if err == nil || !strings.Contains(err.Error(), "no raft group") {
			t.Errorf("RAFT DIGEST %s: %v, want an error naming no such group", bad, err)
		}
	}
	if err := rdb.Do(ctx, "RAFT", "DIGEST", "0", "1").Err(); err == nil {
		t.Errorf("RAFT DIGEST 0 1: no error")
	}
}
