package server

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redcell/redcell/commands"
	"github.com/redcell/redcell/nodeinfo"
	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

// The Redis Cluster protocol, so that cluster-mode clients (go-redis's
// ClusterClient, rueidis, redis-py's RedisCluster, ioredis's Cluster,
// node-redis's createCluster, redis-cli -c) connect. Each Raft group is a
// shard: its leader the master, its other voters the replicas. The node
// describes its groups (Backend.Cluster, a nodeinfo.Cluster) and these
// handlers write that view in Redis 7.0's shapes, byte for byte, so this
// file knows nothing of Raft. docs/cluster.md says what each reply means
// here and what is not available.

// CLUSTER <SLOTS | SHARDS | NODES | INFO | MYID | KEYSLOT key |
// COUNTKEYSINSLOT slot | GETKEYSINSLOT slot count | REPLICAS node-id |
// SLAVES node-id | HELP>
// The cluster's topology as Redis Cluster reports it (each Raft group a
// shard), a key's hash slot, and the keys of a slot.
func cmdCluster(c *conn, s *commands.Spec, args [][]byte) {
	sub := s.Sub(args[1])
	if sub == nil {
		c.fail(commands.UnknownSubcommand(args[1], "CLUSTER"))
		return
	}
	if !sub.CheckArity(len(args)) {
		c.fail(commands.WrongArgs(sub.Name))
		return
	}
	switch strings.TrimPrefix(sub.Name, "cluster|") {
	case "help":
		writeHelp(c, "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"COUNTKEYSINSLOT <slot>", "    Return the number of keys in <slot>.",
			"GETKEYSINSLOT <slot> <count>", "    Return key names stored by current node in a slot.",
			"INFO", "    Return information about the cluster.",
			"KEYSLOT <key>", "    Return the hash slot for <key>.",
			"MYID", "    Return the node id.",
			"NODES", "    Return cluster configuration seen by node. Output format:",
			"    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
			"REPLICAS <node-id>", "    Return <node-id> replicas.",
			"SLOTS", "    Return information about slots range mappings. Each range is made of:",
			"    start, end, master and replicas IP addresses, ports and ids",
			"SHARDS", "    Return information about slot range mappings and the nodes associated with them.",
			"HELP", "    Prints this help.")
	case "keyslot":
		c.w.Int(int64(slots.KeySlot(args[2])))
	case "myid":
		c.w.BulkString(c.s.cfg.Backend.Cluster().MyID)
	case "slots":
		writeClusterSlots(c, c.s.cfg.Backend.Cluster())
	case "shards":
		writeClusterShards(c, c.s.cfg.Backend.Cluster())
	case "nodes":
		c.w.Verbatim(clusterNodes(c.s.cfg.Backend.Cluster(), time.Now()))
	case "info":
		c.w.Verbatim(clusterInfo(c.s.cfg.Backend.Cluster()))
	case "replicas", "slaves":
		clusterReplicas(c, args[2])
	case "countkeysinslot", "getkeysinslot":
		keysInSlot(c, args)
	}
}

// ASKING
// Accepted as Redis Cluster accepts it; it changes nothing, because no slot
// is ever being imported (and no node answers ASK).
func cmdAsking(c *conn, _ *commands.Spec, _ [][]byte) { c.w.OK() }

// writeClusterSlots writes CLUSTER SLOTS: one entry per slot range, by
// ascending start: [start, end, master, replicas...], each node [endpoint,
// port, id, metadata] with empty metadata (no hostnames are announced). A
// replica the shard's leader judges failed is left out, as Redis leaves out
// a failing replica (isReplicaAvailable): clients open a pool to every node
// the map names, and radix (envoyproxy/ratelimit's client) keeps its old map
// when it cannot reach one of them, so a dead member listed kept it there.
func writeClusterSlots(c *conn, v nodeinfo.Cluster) {
	type entry struct {
		r     nodeinfo.SlotRange
		shard *nodeinfo.Shard
	}
	var entries []entry
	for i := range v.Shards {
		for _, r := range v.Shards[i].Slots {
			entries = append(entries, entry{r, &v.Shards[i]})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.r.First, b.r.First) })
	c.w.Array(len(entries))
	for _, e := range entries {
		var nodes []nodeinfo.ClusterNode
		for i, n := range e.shard.Nodes {
			if i == 0 || n.Health != nodeinfo.HealthFail {
				nodes = append(nodes, n)
			}
		}
		c.w.Array(2 + len(nodes))
		c.w.Int(int64(e.r.First))
		c.w.Int(int64(e.r.Last))
		for _, n := range nodes {
			c.w.Array(4)
			c.w.BulkString(n.Host)
			c.w.Int(int64(n.Port))
			c.w.BulkString(n.ID)
			c.w.MapHeader(0)
		}
	}
}

// writeClusterShards writes CLUSTER SHARDS: per master a map of its slots
// (a flat start, end list) and its nodes, each a map of Redis 7.0's seven
// fields in Redis's order. Shards with one master are one (shardsByMaster).
func writeClusterShards(c *conn, v nodeinfo.Cluster) {
	shards := shardsByMaster(v.Shards)
	c.w.Array(len(shards))
	for _, sh := range shards {
		c.w.MapHeader(2)
		c.w.BulkString("slots")
		c.w.Array(2 * len(sh.Slots))
		for _, r := range sh.Slots {
			c.w.Int(int64(r.First))
			c.w.Int(int64(r.Last))
		}
		c.w.BulkString("nodes")
		c.w.Array(len(sh.Nodes))
		for _, n := range sh.Nodes {
			role := "replica"
			if n.Master {
				role = "master"
			}
			c.w.MapHeader(7)
			c.w.BulkString("id")
			c.w.BulkString(n.ID)
			c.w.BulkString("port")
			c.w.Int(int64(n.Port))
			c.w.BulkString("ip")
			c.w.BulkString(n.Host)
			c.w.BulkString("endpoint")
			c.w.BulkString(n.Host)
			c.w.BulkString("role")
			c.w.BulkString(role)
			c.w.BulkString("replication-offset")
			c.w.Int(n.ReplicationOffset)
			c.w.BulkString("health")
			c.w.BulkString(n.Health)
		}
	}
}

// shardsByMaster merges the shards that have the same master into one, in
// the order their masters first lead one. In Redis Cluster a master is in
// exactly one shard (the nodes serving one set of slots), and clients index
// shards by their master: rueidis keeps one shard per master address, so of
// two shards led by one node (a node leading several groups: after a
// failover, or always with more groups than nodes) it kept the last and had
// no node for the slots of the other. A merged shard has the ranges of
// every group its master leads, ascending, and the first group's members in
// its order, then any other group's; a member's health is the worst any of
// the groups gives it (fail, then loading: each group's leader judges from
// its own polls), its replication offset the first group's. Shards with
// distinct masters, one group's among them, are unchanged.
func shardsByMaster(shards []nodeinfo.Shard) []nodeinfo.Shard {
	var out []nodeinfo.Shard
	byMaster := map[string]int{}
	for _, sh := range shards {
		if len(sh.Nodes) == 0 {
			out = append(out, sh)
			continue
		}
		i, ok := byMaster[sh.Nodes[0].ID]
		if !ok {
			byMaster[sh.Nodes[0].ID] = len(out)
			sh.Slots = slices.Clone(sh.Slots)
			sh.Nodes = slices.Clone(sh.Nodes)
			out = append(out, sh)
			continue
		}
		m := &out[i]
		m.Slots = append(m.Slots, sh.Slots...)
		m.Leaderless = m.Leaderless || sh.Leaderless
		for _, n := range sh.Nodes {
			j := slices.IndexFunc(m.Nodes, func(x nodeinfo.ClusterNode) bool { return x.ID == n.ID })
			if j < 0 {
				m.Nodes = append(m.Nodes, n)
				continue
			}
			if healthRank(n.Health) > healthRank(m.Nodes[j].Health) {
				m.Nodes[j].Health = n.Health
			}
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Slots, func(a, b nodeinfo.SlotRange) int { return cmp.Compare(a.First, b.First) })
	}
	return out
}

// healthRank orders CLUSTER SHARDS' health values from the best.
func healthRank(h string) int {
	switch h {
	case nodeinfo.HealthFail:
		return 2
	case nodeinfo.HealthLoading:
		return 1
	}
	return 0
}

// clusterNodes is CLUSTER NODES' text: a line per node, each ended by "\n",
// in the order the shards first name them (with one shard: master first).
func clusterNodes(v nodeinfo.Cluster, now time.Time) string {
	var b strings.Builder
	for _, ln := range nodeLines(v) {
		b.WriteString(ln.text(now))
		b.WriteByte('\n')
	}
	return b.String()
}

// nodeLineOf is one node as CLUSTER NODES shows it. Redis's format gives a
// node one role: a master with its slots, or the replica of one master.
// With several groups every node is a member of every shard, leading some,
// so a node that leads any shard is a master holding the slots of every
// shard it leads, and a node that leads none is the replica of the first
// shard's master (redis-cli and redis-benchmark read masters and their
// slots from these lines; CLUSTER SLOTS and SHARDS list every replica of
// every range). With one shard this is the shard's lines, master first.
type nodeLineOf struct {
	node     nodeinfo.ClusterNode
	slots    []nodeinfo.SlotRange
	masterID string // "-" for a master
	epoch    uint64 // its own as a master; its master's as a replica
}

// nodeLines merges the shards' members into one line per node.
func nodeLines(v nodeinfo.Cluster) []*nodeLineOf {
	var lines []*nodeLineOf
	byID := map[string]*nodeLineOf{}
	for _, sh := range v.Shards {
		for i, n := range sh.Nodes {
			ln := byID[n.ID]
			if ln == nil {
				ln = &nodeLineOf{node: n, masterID: "-"}
				byID[n.ID] = ln
				lines = append(lines, ln)
				if i > 0 {
					ln.masterID, ln.epoch = sh.Nodes[0].ID, sh.Nodes[0].ConfigEpoch
				}
			}
			if i == 0 {
				if !ln.node.Master {
					ln.node.Master, ln.masterID, ln.epoch = true, "-", 0
				}
				ln.slots = append(ln.slots, sh.Slots...)
				ln.epoch = max(ln.epoch, n.ConfigEpoch)
			}
		}
	}
	for _, ln := range lines {
		slices.SortFunc(ln.slots, func(a, b nodeinfo.SlotRange) int { return a.First - b.First })
	}
	return lines
}

// text is the line as Redis's nodes.conf writes it: id, ip:port@busport
// (the same port: peers and clients share it), flags, the master's ID or
// "-", ping sent and pong received (0: there is no cluster bus; this node's
// own pong is now in whole seconds, as Redis writes it), the config epoch
// (a replica shows its master's), the link state and, for a master, its
// slots.
func (ln *nodeLineOf) text(now time.Time) string {
	n := &ln.node
	var b strings.Builder
	b.WriteString(n.ID)
	b.WriteByte(' ')
	port := strconv.Itoa(n.Port)
	b.WriteString(n.Host + ":" + port + "@" + port)
	b.WriteByte(' ')
	var flags []string
	if n.Myself {
		flags = append(flags, "myself")
	}
	if n.Master {
		flags = append(flags, "master")
	} else {
		flags = append(flags, "slave")
	}
	if n.Health == nodeinfo.HealthFail {
		flags = append(flags, "fail")
	}
	b.WriteString(strings.Join(flags, ","))
	pong := int64(0)
	if n.Myself {
		pong = now.Unix() * 1000
	}
	link := "connected"
	if n.Health == nodeinfo.HealthFail {
		link = "disconnected"
	}
	b.WriteString(" " + ln.masterID + " 0 " + strconv.FormatInt(pong, 10) + " " + strconv.FormatUint(ln.epoch, 10) + " " + link)
	if n.Master {
		for _, r := range ln.slots {
			b.WriteByte(' ')
			b.WriteString(strconv.Itoa(r.First))
			if r.Last != r.First {
				b.WriteString("-" + strconv.Itoa(r.Last))
			}
		}
	}
	return b.String()
}

// clusterInfo is CLUSTER INFO's text, Redis 7.0's fields in its order. The
// cluster is ok when every slot is assigned and every shard has a leader
// this node knows; a leaderless shard's slots count as failing. There is
// no cluster bus, so no message is ever sent or received.
func clusterInfo(v nodeinfo.Cluster) string {
	var assigned, ok, failing, known, size int
	var myEpoch uint64
	for _, sh := range v.Shards {
		n := 0
		for _, r := range sh.Slots {
			n += r.Last - r.First + 1
		}
		assigned += n
		if sh.Leaderless {
			failing += n
		} else {
			ok += n
		}
		for _, nd := range sh.Nodes {
			if nd.Myself && len(sh.Nodes) > 0 {
				myEpoch = sh.Nodes[0].ConfigEpoch
			}
		}
	}
	// Each node once, however many shards name it; the size is the masters
	// serving slots, as Redis counts them.
	for _, ln := range nodeLines(v) {
		known++
		if ln.node.Master && len(ln.slots) > 0 {
			size++
		}
	}
	state := "fail"
	if assigned == slots.Count && failing == 0 {
		state = "ok"
	}
	var b strings.Builder
	kv := func(k string, v any) {
		b.WriteString(k + ":")
		switch x := v.(type) {
		case string:
			b.WriteString(x)
		case int:
			b.WriteString(strconv.Itoa(x))
		case uint64:
			b.WriteString(strconv.FormatUint(x, 10))
		}
		b.WriteString("\r\n")
	}
	kv("cluster_state", state)
	kv("cluster_slots_assigned", assigned)
	kv("cluster_slots_ok", ok)
	kv("cluster_slots_pfail", 0)
	kv("cluster_slots_fail", failing)
	kv("cluster_known_nodes", known)
	kv("cluster_size", size)
	kv("cluster_current_epoch", v.CurrentEpoch)
	kv("cluster_my_epoch", myEpoch)
	kv("cluster_stats_messages_sent", 0)
	kv("cluster_stats_messages_received", 0)
	kv("total_cluster_links_buffer_limit_exceeded", 0)
	return b.String()
}

// clusterReplicas answers CLUSTER REPLICAS (SLAVES) node-id: the replicas of
// a master as CLUSTER NODES lines, each without its newline, as Redis.
func clusterReplicas(c *conn, id []byte) {
	lines := nodeLines(c.s.cfg.Backend.Cluster())
	for _, ln := range lines {
		if ln.node.ID != string(id) {
			continue
		}
		if !ln.node.Master {
			c.fail(commands.ErrNotAMaster)
			return
		}
		now := time.Now()
		var replicas []string
		for _, r := range lines {
			if r.masterID == ln.node.ID {
				replicas = append(replicas, r.text(now))
			}
		}
		c.w.Array(len(replicas))
		for _, r := range replicas {
			c.w.BulkString(r)
		}
		return
	}
	c.fail(commands.UnknownNode(id))
}

// keysInSlot answers CLUSTER COUNTKEYSINSLOT slot and GETKEYSINSLOT slot
// count, with Redis's argument checks. Redcell keeps no index by slot, so
// it reads every live key (KEYS *) through the ordinary read path, a
// linearizable read (READONLY: this node's own state), and keeps the
// slot's: O(keys in the keyspace), where Redis's is O(1) or O(count). A
// read with no new request code: a follower forwards it as any KEYS.
func keysInSlot(c *conn, args [][]byte) {
	get := len(args) == 4
	slot, ok := commands.ParseInt(args[2])
	if !ok {
		c.fail(commands.ErrNotInteger)
		return
	}
	limit := int64(-1)
	if get {
		if limit, ok = commands.ParseInt(args[3]); !ok {
			c.fail(commands.ErrNotInteger)
			return
		}
	}
	if slot < 0 || slot >= slots.Count || (get && limit < 0) {
		if get {
			c.fail(commands.ErrInvalidSlotOrCount)
		} else {
			c.fail(commands.ErrInvalidSlot)
		}
		return
	}
	reqs := [1]request.Request{{Code: request.Keys, Key: []byte("*")}}
	var res [1]request.Result
	read := c.s.cfg.Backend.Read
	if c.readonly {
		read = c.s.cfg.Backend.ReadLocal
	}
	if err := read(reqs[:], res[:]); err != nil {
		c.fail(backendErrText(err))
		return
	}
	if res[0].Kind != request.KindKeys {
		c.writeResult(&res[0]) // a state machine's error, as a KEYS would answer it
		return
	}
	var keys [][]byte
	count := int64(0)
	request.Items(res[0].Data, func(key []byte) {
		if int64(slots.KeySlot(key)) != slot {
			return
		}
		count++
		if get && int64(len(keys)) < limit {
			keys = append(keys, key)
		}
	})
	if !get {
		c.w.Int(count)
		return
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
}
