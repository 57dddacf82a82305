package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/nodeinfo"
)

// The Redis Cluster protocol's replies, compared byte for byte with what
// Redis 7.0.15 answered on a real cluster (cluster "B" of the capture: one
// master, 127.0.0.1:30011, owning every slot, and two replicas, 30012 and
// 30013; asked on the replica 30012, RESP2 and RESP3). The view handed to
// the server is that cluster, so every difference is the server's.

const (
	idB1 = "058e161182e6827e78d44e4023d30049ee573b38" // 30011, master
	idB2 = "f0bc5490a15b593eb4a3f2684e38ca98b2a3f559" // 30012, the node asked
	idB3 = "20d209ae07d8f1242a29f23f700edc09078d692b" // 30013
)

// clusterB is cluster B as node 30012 sees it, with replication offsets
// (master, self, other replica).
func clusterB(offsets [3]int64) nodeinfo.Cluster {
	node := func(id string, port int, master, myself bool, off int64) nodeinfo.ClusterNode {
		return nodeinfo.ClusterNode{ID: id, Host: "127.0.0.1", Port: port, Master: master, Myself: myself,
			Health: nodeinfo.HealthOnline, ReplicationOffset: off, ConfigEpoch: 1}
	}
	return nodeinfo.Cluster{MyID: idB2, CurrentEpoch: 2, Shards: []nodeinfo.Shard{{
		Slots: []nodeinfo.SlotRange{{First: 0, Last: 16383}},
		Nodes: []nodeinfo.ClusterNode{
			node(idB1, 30011, true, false, offsets[0]),
			node(idB2, 30012, false, true, offsets[1]),
			node(idB3, 30013, false, false, offsets[2]),
		},
	}}}
}

// clusterReply runs one command on a fresh connection of s speaking proto
// and returns its raw reply.
func clusterReply(s *Server, proto int, args ...string) string {
	c := s.newConn(nopConn{})
	c.setProto(proto)
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	c.exec(argv)
	c.answerPending()
	return string(c.w.B)
}

func TestClusterRepliesLikeRedis(t *testing.T) {
	backend := &stubBackend{}
	s := stubServer(t, backend)
	const (
		slots2 = "*1\r\n*5\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:30011\r\n$40\r\n058e161182e6827e78d44e4023d30049ee573b38\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:30012\r\n$40\r\nf0bc5490a15b593eb4a3f2684e38ca98b2a3f559\r\n*0\r\n*4\r\n$9\r\n127.0.0.1\r\n:30013\r\n$40\r\n20d209ae07d8f1242a29f23f700edc09078d692b\r\n*0\r\n"
		slots3 = "*1\r\n*5\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:30011\r\n$40\r\n058e161182e6827e78d44e4023d30049ee573b38\r\n%0\r\n*4\r\n$9\r\n127.0.0.1\r\n:30012\r\n$40\r\nf0bc5490a15b593eb4a3f2684e38ca98b2a3f559\r\n%0\r\n*4\r\n$9\r\n127.0.0.1\r\n:30013\r\n$40\r\n20d209ae07d8f1242a29f23f700edc09078d692b\r\n%0\r\n"

		shards2 = "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*3\r\n*14\r\n$2\r\nid\r\n$40\r\n058e161182e6827e78d44e4023d30049ee573b38\r\n$4\r\nport\r\n:30011\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:1377\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\nf0bc5490a15b593eb4a3f2684e38ca98b2a3f559\r\n$4\r\nport\r\n:30012\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n:1882\r\n$6\r\nhealth\r\n$6\r\nonline\r\n*14\r\n$2\r\nid\r\n$40\r\n20d209ae07d8f1242a29f23f700edc09078d692b\r\n$4\r\nport\r\n:30013\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n:1391\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"
		shards3 = "*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*3\r\n%7\r\n$2\r\nid\r\n$40\r\n058e161182e6827e78d44e4023d30049ee573b38\r\n$4\r\nport\r\n:30011\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:1377\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%7\r\n$2\r\nid\r\n$40\r\nf0bc5490a15b593eb4a3f2684e38ca98b2a3f559\r\n$4\r\nport\r\n:30012\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n:2455\r\n$6\r\nhealth\r\n$6\r\nonline\r\n%7\r\n$2\r\nid\r\n$40\r\n20d209ae07d8f1242a29f23f700edc09078d692b\r\n$4\r\nport\r\n:30013\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n:1391\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"

		// Redis's, less the message counters (there is no cluster bus:
		// Redis leaves out the counters of message types never sent, as
		// a lone node of the capture shows).
		info = "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:3\r\ncluster_size:1\r\ncluster_current_epoch:2\r\ncluster_my_epoch:1\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"
	)
	tests := []struct {
		proto   int
		offsets [3]int64
		args    []string
		want    string
	}{
		{2, [3]int64{1377, 1882, 1391}, []string{"CLUSTER", "SLOTS"}, slots2},
		{3, [3]int64{1377, 2455, 1391}, []string{"CLUSTER", "SLOTS"}, slots3},
		{2, [3]int64{1377, 1882, 1391}, []string{"CLUSTER", "SHARDS"}, shards2},
		{3, [3]int64{1377, 2455, 1391}, []string{"cluster", "shards"}, shards3},
		{2, [3]int64{}, []string{"CLUSTER", "INFO"}, fmt.Sprintf("$%d\r\n%s\r\n", len(info), info)},
		{3, [3]int64{}, []string{"CLUSTER", "INFO"}, fmt.Sprintf("=%d\r\ntxt:%s\r\n", len(info)+4, info)},
		{2, [3]int64{}, []string{"CLUSTER", "MYID"}, "$40\r\nf0bc5490a15b593eb4a3f2684e38ca98b2a3f559\r\n"},
		{3, [3]int64{}, []string{"CLUSTER", "MYID"}, "$40\r\nf0bc5490a15b593eb4a3f2684e38ca98b2a3f559\r\n"},
		{2, [3]int64{}, []string{"INFO", "cluster"}, "$30\r\n# Cluster\r\ncluster_enabled:1\r\n\r\n"},
		{3, [3]int64{}, []string{"INFO", "cluster"}, "=34\r\ntxt:# Cluster\r\ncluster_enabled:1\r\n\r\n"},
		// CLUSTER REPLICAS: node lines without their newline.
		{2, [3]int64{}, []string{"CLUSTER", "REPLICAS", idB2}, "-ERR The specified node is not a master\r\n"},
		{2, [3]int64{}, []string{"CLUSTER", "SLAVES", "nosuch"}, "-ERR Unknown node nosuch\r\n"},
	}
	for _, tt := range tests {
		backend.cluster = clusterB(tt.offsets)
		if got := clusterReply(s, tt.proto, tt.args...); got != tt.want {
			t.Errorf("RESP%d %q:\n got %q\nwant %q", tt.proto, tt.args, got, tt.want)
		}
	}
}

// TestClusterNodesLines: the capture's lines for cluster B on 30012, with
// Redcell's differences: the bus port is the client port (no separate bus),
// ping and pong times are 0 but this node's own pong (now in whole seconds,
// as Redis writes it), and the master comes first.
func TestClusterNodesLines(t *testing.T) {
	now := time.UnixMilli(1796220631234)
	got := clusterNodes(clusterB([3]int64{}), now)
	want := idB1 + " 127.0.0.1:30011@30011 master - 0 0 1 connected 0-16383\n" +
		idB2 + " 127.0.0.1:30012@30012 myself,slave " + idB1 + " 0 1796220631000 1 connected\n" +
		idB3 + " 127.0.0.1:30013@30013 slave " + idB1 + " 0 0 1 connected\n"
	if got != want {
		t.Errorf("CLUSTER NODES:\n got %q\nwant %q", got, want)
	}

	// Several shards and ranges: a master lists each range, a lone slot
	// without a dash (Redis's "100-200 1000"); a failing node is flagged
	// and disconnected.
	v := nodeinfo.Cluster{MyID: "a", Shards: []nodeinfo.Shard{
		{Slots: []nodeinfo.SlotRange{{First: 100, Last: 200}, {First: 1000, Last: 1000}},
			Nodes: []nodeinfo.ClusterNode{{ID: "a", Host: "10.0.0.1", Port: 7000, Master: true, Myself: true, Health: "online", ConfigEpoch: 4}}},
		{Slots: []nodeinfo.SlotRange{{First: 0, Last: 99}},
			Nodes: []nodeinfo.ClusterNode{
				{ID: "b", Host: "10.0.0.2", Port: 7000, Master: true, Health: "online", ConfigEpoch: 3},
				{ID: "c", Host: "10.0.0.3", Port: 7001, Health: "fail", ConfigEpoch: 3}}},
	}}
	got = clusterNodes(v, now)
	want = "a 10.0.0.1:7000@7000 myself,master - 0 1796220631000 4 connected 100-200 1000\n" +
		"b 10.0.0.2:7000@7000 master - 0 0 3 connected 0-99\n" +
		"c 10.0.0.3:7001@7001 slave,fail b 0 0 3 disconnected\n"
	if got != want {
		t.Errorf("CLUSTER NODES of two shards:\n got %q\nwant %q", got, want)
	}
	// CLUSTER SLOTS lists ranges by their first slot, whatever the shards'
	// order.
	backend := &stubBackend{cluster: v}
	s := stubServer(t, backend)
	r := clusterReply(s, 2, "CLUSTER", "SLOTS")
	if i, j, k := strings.Index(r, ":0\r\n:99\r\n"), strings.Index(r, ":100\r\n:200\r\n"), strings.Index(r, ":1000\r\n:1000\r\n"); !strings.HasPrefix(r, "*3\r\n") || i < 0 || i > j || j > k {
		t.Errorf("CLUSTER SLOTS of two shards = %q, want three ranges by first slot", r)
	}
	if r := clusterReply(s, 2, "CLUSTER", "REPLICAS", "b"); r != "*1\r\n$52\r\nc 10.0.0.3:7001@7001 slave,fail b 0 0 3 disconnected\r\n" {
		t.Errorf("CLUSTER REPLICAS b = %q", r)
	}
}

// TestClusterInfoStates: a shard without a known leader fails the cluster
// and its slots count as failing; so do slots no shard owns.
func TestClusterInfoStates(t *testing.T) {
	v := clusterB([3]int64{})
	v.Shards[0].Leaderless = true
	got := clusterInfo(v)
	if !strings.HasPrefix(got, "cluster_state:fail\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:0\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:16384\r\n") {
		t.Errorf("leaderless: %q", got)
	}
	v = clusterB([3]int64{})
	v.Shards[0].Slots = []nodeinfo.SlotRange{{First: 100, Last: 200}, {First: 1000, Last: 1000}}
	got = clusterInfo(v)
	if !strings.HasPrefix(got, "cluster_state:fail\r\ncluster_slots_assigned:102\r\ncluster_slots_ok:102\r\n") {
		t.Errorf("partial coverage: %q", got)
	}
}

// TestClusterArgumentErrors: Redis 7.0.15's texts for each wrong use.
func TestClusterArgumentErrors(t *testing.T) {
	s := stubServer(t, &stubBackend{cluster: clusterB([3]int64{})})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"CLUSTER", "KEYSLOT", "123456789"}, ":12739\r\n"},
		{[]string{"CLUSTER", "KEYSLOT", "{user42}:a"}, ":14710\r\n"},
		{[]string{"CLUSTER", "KEYSLOT", "foo{}bar"}, ":14292\r\n"},
		{[]string{"CLUSTER", "KEYSLOT", "foo{{bar}}zap"}, ":4015\r\n"},
		{[]string{"CLUSTER", "KEYSLOT", "a"}, ":15495\r\n"},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "16384"}, "-ERR Invalid slot\r\n"},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "-1"}, "-ERR Invalid slot\r\n"},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "abc"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "1", "-1"}, "-ERR Invalid slot or number of keys\r\n"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "1", "abc"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "16384", "1"}, "-ERR Invalid slot or number of keys\r\n"},
		{[]string{"CLUSTER", "KEYSLOT"}, "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n"},
		{[]string{"CLUSTER", "KEYSLOT", "a", "b"}, "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n"},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT"}, "-ERR wrong number of arguments for 'cluster|countkeysinslot' command\r\n"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "1"}, "-ERR wrong number of arguments for 'cluster|getkeysinslot' command\r\n"},
		{[]string{"CLUSTER"}, "-ERR wrong number of arguments for 'cluster' command\r\n"},
		{[]string{"CLUSTER", "FOO"}, "-ERR unknown subcommand 'FOO'. Try CLUSTER HELP.\r\n"},
		{[]string{"CLUSTER", "MYSHARDID"}, "-ERR unknown subcommand 'MYSHARDID'. Try CLUSTER HELP.\r\n"},
		{[]string{"CLUSTER", "SLOTS", "extra-arg"}, "-ERR wrong number of arguments for 'cluster|slots' command\r\n"},
		{[]string{"CLUSTER", "INFO", "extra"}, "-ERR wrong number of arguments for 'cluster|info' command\r\n"},
		{[]string{"CLUSTER", "MYID", "extra"}, "-ERR wrong number of arguments for 'cluster|myid' command\r\n"},
		{[]string{"CLUSTER", "SHARDS", "extra"}, "-ERR wrong number of arguments for 'cluster|shards' command\r\n"},
		{[]string{"CLUSTER", "NODES", "extra"}, "-ERR wrong number of arguments for 'cluster|nodes' command\r\n"},
		{[]string{"READONLY"}, "+OK\r\n"},
		{[]string{"READWRITE"}, "+OK\r\n"},
		{[]string{"ASKING"}, "+OK\r\n"},
		{[]string{"READONLY", "extra-arg"}, "-ERR wrong number of arguments for 'readonly' command\r\n"},
		{[]string{"READWRITE", "extra-arg"}, "-ERR wrong number of arguments for 'readwrite' command\r\n"},
		{[]string{"ASKING", "extra-arg"}, "-ERR wrong number of arguments for 'asking' command\r\n"},
	}
	for _, tt := range tests {
		for _, proto := range []int{2, 3} {
			if got := clusterReply(s, proto, tt.args...); got != tt.want {
				t.Errorf("RESP%d %q = %q, want %q", proto, tt.args, got, tt.want)
			}
		}
	}
	if got := clusterReply(s, 2, "CLUSTER", "HELP"); !strings.HasPrefix(got, "*") || !strings.Contains(got, "+SHARDS\r\n") {
		t.Errorf("CLUSTER HELP = %q", got)
	}
}

// TestClusterKeysInSlot: COUNTKEYSINSLOT and GETKEYSINSLOT read the node's
// live keys through the linearizable read path, on a real group.
func TestClusterKeysInSlot(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	for _, k := range []string{"{user42}:a", "{user42}:b", "a", "b"} {
		if got := c.do("SET", k, "1"); got != "+OK" {
			t.Fatalf("SET %s = %s", k, got)
		}
	}
	for _, tt := range []struct{ args, want string }{
		{"CLUSTER COUNTKEYSINSLOT 14710", ":2"},
		{"CLUSTER COUNTKEYSINSLOT 15495", ":1"},
		{"CLUSTER COUNTKEYSINSLOT 0", ":0"},
		{"CLUSTER GETKEYSINSLOT 15495 10", "*[$a]"},
		{"CLUSTER GETKEYSINSLOT 14710 0", "*[]"},
		{"CLUSTER GETKEYSINSLOT 0 10", "*[]"},
	} {
		if got := c.do(strings.Fields(tt.args)...); got != tt.want {
			t.Errorf("%s = %s, want %s", tt.args, got, tt.want)
		}
	}
	got := c.do("CLUSTER", "GETKEYSINSLOT", "14710", "5")
	if got != "*[${user42}:a ${user42}:b]" && got != "*[${user42}:b ${user42}:a]" {
		t.Errorf("GETKEYSINSLOT 14710 5 = %s", got)
	}
	if got := c.do("CLUSTER", "GETKEYSINSLOT", "14710", "1"); !strings.HasPrefix(got, "*[${user42}:") || strings.Count(got, "$") != 1 {
		t.Errorf("GETKEYSINSLOT 14710 1 = %s, want one key", got)
	}
}

// TestClusterViewOfLocalGroup: the bare group is one shard holding every
// slot, led by this node, with its ID hashed from the node's.
func TestClusterViewOfLocalGroup(t *testing.T) {
	n := startTestNode(t)
	v := n.backend.Cluster()
	if v.MyID != nodeinfo.ClusterID("node1") || len(v.MyID) != 40 {
		t.Errorf("MyID = %q, want ClusterID(node1)", v.MyID)
	}
	if len(v.Shards) != 1 || len(v.Shards[0].Slots) != 1 || v.Shards[0].Slots[0] != (nodeinfo.SlotRange{First: 0, Last: 16383}) || v.Shards[0].Leaderless {
		t.Fatalf("shards = %+v, want one led shard of every slot", v.Shards)
	}
	nd := v.Shards[0].Nodes
	if len(nd) != 1 || !nd[0].Master || !nd[0].Myself || nd[0].ID != v.MyID || nd[0].Health != "online" || nd[0].ConfigEpoch == 0 || v.CurrentEpoch != nd[0].ConfigEpoch {
		t.Errorf("nodes = %+v (current epoch %d), want this node as the master", nd, v.CurrentEpoch)
	}
	if got := n.dial().do("CLUSTER", "INFO"); !strings.HasPrefix(got, "$cluster_state:ok\r\n") {
		t.Errorf("CLUSTER INFO = %q", got)
	}
}

// TestCommandGetKeysAndKeySpecs: what cluster clients route by. COMMAND
// GETKEYS finds the keys of limiter, string and script commands as Redis
// 7.0 does, with its errors; COMMAND INFO's key specs name them, a
// script's as Redis's keynum spec with Redis's flag spelling.
func TestCommandGetKeysAndKeySpecs(t *testing.T) {
	n := startTestNode(t)
	c := n.dial()
	for _, tt := range []struct{ args, want string }{
		{"CL.THROTTLE k1 15 30 60 1", "*[$k1]"},
		{"CL.PEEK k1 15 30 60", "*[$k1]"},
		{"TB.TAKE k2 10 1 1", "*[$k2]"},
		{"SL.HIT k3 10 60000", "*[$k3]"},
		{"INCREX k4 BY 1", "*[$k4]"},
		{"MSET a 1 b 2", "*[$a $b]"},
		{"DEL a b c", "*[$a $b $c]"},
		{"EVAL return 2 a b c", "*[$a $b]"},
		{"EVALSHA abc 1 a b", "*[$a]"},
		{"EVAL_RO return 1 x", "*[$x]"},
		{"EVAL return 0", "*[]"},
		{"EVAL return 5 a", "*[]"},
		{"EVAL return x a", "*[]"},
		{"NOSUCH a", "-ERR Invalid command specified"},
		{"PING", "-ERR The command has no key arguments"},
		{"GET", "-ERR Invalid number of arguments specified for command"},
		{"GET a b", "-ERR Invalid number of arguments specified for command"},
		{"COMMAND GETKEYS", "-ERR wrong number of arguments for 'command|getkeys' command"},
	} {
		args := append([]string{"COMMAND", "GETKEYS"}, strings.Fields(tt.args)...)
		if tt.args == "COMMAND GETKEYS" {
			args = []string{"COMMAND", "GETKEYS"}
		}
		if got := c.do(args...); got != tt.want {
			t.Errorf("COMMAND GETKEYS %s = %s, want %s", tt.args, got, tt.want)
		}
	}
	// Key specs, RESP2, against Redis 7.0.15's for GET and EVAL (the
	// capture's COMMAND INFO GET EVAL).
	for _, tt := range []struct{ cmd, want string }{
		{"get", "*[*[$flags *[+RO +access] $begin_search *[$type $index $spec *[$index :1]] $find_keys *[$type $range $spec *[$lastkey :0 $keystep :1 $limit :0]]]]"},
		{"eval", "*[*[$notes $We cannot tell how the keys will be used so we assume the worst, RW and UPDATE $flags *[+RW +access +update] $begin_search *[$type $index $spec *[$index :2]] $find_keys *[$type $keynum $spec *[$keynumidx :0 $firstkey :1 $keystep :1]]]]"},
		{"cl.throttle", "*[*[$flags *[+RW +update] $begin_search *[$type $index $spec *[$index :1]] $find_keys *[$type $range $spec *[$lastkey :0 $keystep :1 $limit :0]]]]"},
	} {
		r := c.replyTreeOf("COMMAND", "INFO", tt.cmd)
		if got := r.elems[0].elems[8].String(); got != tt.want {
			t.Errorf("COMMAND INFO %s key specs:\n got %s\nwant %s", tt.cmd, got, tt.want)
		}
	}
}

// Every node in every shard (several groups): CLUSTER NODES has one line a
// node, a master holding the slots of every shard it leads and a node that
// leads none the replica of the first shard's master; CLUSTER INFO counts
// each node once and the masters serving slots.
func TestClusterNodesOfGroups(t *testing.T) {
	now := time.UnixMilli(1796220631234)
	node := func(id string, port int, master bool, epoch uint64) nodeinfo.ClusterNode {
		return nodeinfo.ClusterNode{ID: id, Host: "127.0.0.1", Port: port, Master: master, Myself: id == "a", Health: "online", ConfigEpoch: epoch}
	}
	v := nodeinfo.Cluster{MyID: "a", CurrentEpoch: 5, Shards: []nodeinfo.Shard{
		{Slots: []nodeinfo.SlotRange{{First: 0, Last: 5460}}, Nodes: []nodeinfo.ClusterNode{node("a", 7000, true, 2), node("b", 7001, false, 2), node("c", 7002, false, 2)}},
		{Slots: []nodeinfo.SlotRange{{First: 5461, Last: 10922}}, Nodes: []nodeinfo.ClusterNode{node("b", 7001, true, 5), node("a", 7000, false, 5), node("c", 7002, false, 5)}},
		{Slots: []nodeinfo.SlotRange{{First: 10923, Last: 16383}}, Nodes: []nodeinfo.ClusterNode{node("a", 7000, true, 3), node("b", 7001, false, 3), node("c", 7002, false, 3)}},
	}}
	got := clusterNodes(v, now)
	want := "a 127.0.0.1:7000@7000 myself,master - 0 1796220631000 3 connected 0-5460 10923-16383\n" +
		"b 127.0.0.1:7001@7001 master - 0 0 5 connected 5461-10922\n" +
		"c 127.0.0.1:7002@7002 slave a 0 0 2 connected\n"
	if got != want {
		t.Errorf("CLUSTER NODES of three groups:\n got %q\nwant %q", got, want)
	}
	info := clusterInfo(v)
	for _, line := range []string{"cluster_state:ok\r\n", "cluster_known_nodes:3\r\n", "cluster_size:2\r\n"} {
		if !strings.Contains(info, line) {
			t.Errorf("CLUSTER INFO lacks %q:\n%s", line, info)
		}
	}
}

// TestClusterShardsOfGroups: CLUSTER SHARDS lists a master once, as Redis
// Cluster does, with the ranges of every group it leads (rueidis indexes
// shards by master and lost the slots of all but one such shard); a
// member's health is the worst any group gives it, its offset the first
// group's.
func TestClusterShardsOfGroups(t *testing.T) {
	node := func(id string, port int, master bool, health string, off int64) nodeinfo.ClusterNode {
		return nodeinfo.ClusterNode{ID: id, Host: "127.0.0.1", Port: port, Master: master, Myself: id == "a", Health: health, ReplicationOffset: off}
	}
	v := nodeinfo.Cluster{MyID: "a", Shards: []nodeinfo.Shard{
		{Slots: []nodeinfo.SlotRange{{First: 10923, Last: 16383}}, Nodes: []nodeinfo.ClusterNode{node("a", 7000, true, "online", 30), node("c", 7002, false, "fail", 20), node("b", 7001, false, "online", 30)}},
		{Slots: []nodeinfo.SlotRange{{First: 5461, Last: 10922}}, Nodes: []nodeinfo.ClusterNode{node("b", 7001, true, "online", 50), node("a", 7000, false, "online", 50), node("c", 7002, false, "online", 0)}},
		{Slots: []nodeinfo.SlotRange{{First: 0, Last: 5460}}, Nodes: []nodeinfo.ClusterNode{node("a", 7000, true, "online", 40), node("b", 7001, false, "loading", 40), node("c", 7002, false, "online", 40)}},
	}}
	got := shardsByMaster(v.Shards)
	want := []nodeinfo.Shard{
		{Slots: []nodeinfo.SlotRange{{First: 0, Last: 5460}, {First: 10923, Last: 16383}}, Nodes: []nodeinfo.ClusterNode{node("a", 7000, true, "online", 30), node("c", 7002, false, "fail", 20), node("b", 7001, false, "loading", 30)}},
		v.Shards[1],
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shards by master:\n got %v\nwant %v", got, want)
	}
	if v.Shards[0].Slots[0].First != 10923 || v.Shards[0].Nodes[2].Health != "online" {
		t.Errorf("merging changed the node's view: %v", v.Shards[0])
	}
	s := stubServer(t, &stubBackend{cluster: v})
	r := clusterReply(s, 2, "CLUSTER", "SHARDS")
	if !strings.HasPrefix(r, "*2\r\n*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:5460\r\n:10923\r\n:16383\r\n$5\r\nnodes\r\n*3\r\n") {
		t.Errorf("CLUSTER SHARDS of a node leading two of three groups = %q, want two shards, the first with both its ranges", r)
	}
	// One group, or masters all distinct: as the node describes them.
	if got := shardsByMaster(clusterB([3]int64{1, 2, 3}).Shards); fmt.Sprint(got) != fmt.Sprint(clusterB([3]int64{1, 2, 3}).Shards) {
		t.Errorf("one shard changed: %v", got)
	}
}

// TestClusterSlotsLeavesOutFailedReplicas: CLUSTER SLOTS names no replica
// the shard's leader judges failed, as Redis leaves out a failing one; the
// master stays, and CLUSTER SHARDS and NODES still show the member, failed.
func TestClusterSlotsLeavesOutFailedReplicas(t *testing.T) {
	v := clusterB([3]int64{1, 2, 3})
	v.Shards[0].Nodes[2].Health = nodeinfo.HealthFail
	s := stubServer(t, &stubBackend{cluster: v})
	r := clusterReply(s, 2, "CLUSTER", "SLOTS")
	if !strings.HasPrefix(r, "*1\r\n*4\r\n:0\r\n:16383\r\n") || strings.Contains(r, idB3) || !strings.Contains(r, idB1) || !strings.Contains(r, idB2) {
		t.Errorf("CLUSTER SLOTS with replica 30013 failed = %q, want the master and 30012 only", r)
	}
	if r := clusterReply(s, 2, "CLUSTER", "SHARDS"); !strings.Contains(r, idB3) || !strings.Contains(r, "$4\r\nfail\r\n") {
		t.Errorf("CLUSTER SHARDS = %q, want 30013 with health fail", r)
	}
	if r := clusterReply(s, 2, "CLUSTER", "NODES"); !strings.Contains(r, idB3+" 127.0.0.1:30013@30013 slave,fail ") {
		t.Errorf("CLUSTER NODES = %q, want 30013 flagged fail", r)
	}
}
