package systemtest

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/redcell/redcell/fsm"
	"github.com/redcell/redcell/group"
	"github.com/redcell/redcell/mux"
	"github.com/redcell/redcell/request"
)

// TestForgedRaftFramesChangeNothing is the attack from the safety issue:
// a client that can reach the client port but lacks the cluster secret
// sends raft RPCs — heartbeats and votes with a far higher term, and an
// AppendEntries carrying FLUSHALL. Before peers were authenticated, the
// heartbeats made the leader step down (1 decision in 10 s) and the
// FLUSHALL emptied the keyspace. Now nothing may change: the leader keeps
// leading in the same term, the keyspace is intact and decisions go on
// throughout.
func TestForgedRaftFramesChangeNothing(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte("correct horse battery staple\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	attackers := map[string]func(addr string, timeout time.Duration) (net.Conn, error){
		// raft's own framing with the 0x8E header and no handshake.
		"raw": func(addr string, timeout time.Duration) (net.Conn, error) {
			c, err := net.DialTimeout("tcp", addr, timeout)
			if err == nil {
				_, err = c.Write([]byte{mux.HeaderRaft})
			}
			return c, err
		},
		// a Redcell peer that holds another secret.
		"wrong_secret": wrongSecretDialer(t),
	}
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"single_node_without_secret", nil},
		{"node_with_secret", []string{"--cluster-secret-file", secretFile, "--bootstrap"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := startTestNode(t, "raftauth-"+tc.name, tc.flags...)
			c := mustDial(t, n.addr())
			// A key refused from now on (burst 1, one per day), and a few
			// others that give the keyspace a size to compare.
			for i := 0; i < 2; i++ {
				mustDo(t, c, "CL.THROTTLE", "victim", "0", "1", "86400")
			}
			for i := 0; i < 5; i++ {
				mustDo(t, c, "CL.THROTTLE", "other:"+strconv.Itoa(i), "5", "1", "86400")
			}
			before := raftInfo(t, c)
			dbsize := mustDo(t, c, "DBSIZE").num

			for name, dial := range attackers {
				rejected := attack(t, n.addr(), before.term, dial)
				t.Logf("%s: %d forged RPCs, all refused", name, rejected)
				// Decisions keep flowing right after each wave.
				if r := mustDo(t, c, "CL.THROTTLE", "during:"+name, "5", "1", "86400"); r.isErr() {
					t.Fatalf("decision after the %s attack: %v", name, r)
				}
			}

			after := raftInfo(t, c)
			if after.state != "leader" || after.term != before.term || after.leader != before.leader {
				t.Errorf("raft after the attack: %+v, before: %+v (want the same leader in the same term)", after, before)
			}
			if got := mustDo(t, c, "DBSIZE").num; got != dbsize+int64(len(attackers)) {
				t.Errorf("DBSIZE %d after the attack, want %d", got, dbsize+int64(len(attackers)))
			}
			r := mustDo(t, c, "CL.THROTTLE", "victim", "0", "1", "86400")
			if v, _ := r.ints(); len(v) != 5 || v[0] != 1 {
				t.Errorf("the refused key answered %v after the attack: want still refused", r)
			}
			info := mustDo(t, c, "INFO", "stats").str
			if got, _ := strconv.Atoi(infoField(info, "peer_connections_rejected")); got == 0 {
				t.Errorf("INFO stats counts no rejected peer connection:\n%s", info)
			}
			if got := infoField(info, "peer_connections_accepted"); got != "0" {
				t.Errorf("peer_connections_accepted = %s, want 0", got)
			}
		})
	}
}

type raftView struct {
	state, leader string
	term          uint64
}

func raftInfo(t *testing.T, c *respConn) raftView {
	t.Helper()
	info := mustDo(t, c, "INFO", "raft").str
	term, err := strconv.ParseUint(infoField(info, "raft_term"), 10, 64)
	if err != nil {
		t.Fatalf("raft_term in INFO raft: %v\n%s", err, info)
	}
	return raftView{state: infoField(info, "raft_state"), leader: infoField(info, "raft_leader_id"), term: term}
}

// attack sends forged raft RPCs through hashicorp/raft's own network
// transport — a heartbeat, a vote request and an AppendEntries carrying
// FLUSHALL, each with a term far above the victim's — and requires every
// one of them to fail. It returns how many were sent.
func attack(t *testing.T, addr string, term uint64, dial func(string, time.Duration) (net.Conn, error)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &group.StreamLayer{Listener: ln, Advertise: ln.Addr(), DialPeer: dial},
		MaxPool: 1,
		Timeout: 2 * time.Second,
		Logger:  hclog.NewNullLogger(),
	})
	defer func() {
		trans.Close()
		ln.Close()
	}()
	var enc fsm.Encoder
	enc.Reset(time.Now().UnixNano())
	enc.Add(&request.Request{Code: request.FlushAll})
	flush := enc.Finish()

	target, id := raft.ServerAddress(addr), raft.ServerID("victim")
	forgedTerm := term + 100
	sent := 0
	for round := 0; round < 5; round++ {
		header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("attacker"), Addr: []byte(ln.Addr().String())}
		var aeResp raft.AppendEntriesResponse
		err := trans.AppendEntries(id, target, &raft.AppendEntriesRequest{RPCHeader: header, Term: forgedTerm, LeaderCommitIndex: 1 << 40}, &aeResp)
		sent++
		if err == nil {
			t.Fatalf("a forged heartbeat was answered: %+v", aeResp)
		}
		var voteResp raft.RequestVoteResponse
		err = trans.RequestVote(id, target, &raft.RequestVoteRequest{RPCHeader: header, Term: forgedTerm + 1, LastLogIndex: 1 << 40, LastLogTerm: forgedTerm}, &voteResp)
		sent++
		if err == nil {
			t.Fatalf("a forged vote request was answered: %+v", voteResp)
		}
		entry := &raft.Log{Index: 1 << 30, Term: forgedTerm, Type: raft.LogCommand, Data: flush, AppendedAt: time.Now()}
		err = trans.AppendEntries(id, target, &raft.AppendEntriesRequest{
			RPCHeader: header, Term: forgedTerm, PrevLogEntry: 0, PrevLogTerm: 0,
			Entries: []*raft.Log{entry}, LeaderCommitIndex: 1 << 30,
		}, &aeResp)
		sent++
		if err == nil {
			t.Fatalf("a forged FLUSHALL entry was answered: %+v", aeResp)
		}
	}
	return sent
}

// wrongSecretDialer dials like a genuine Redcell peer that holds a secret
// other than the cluster's.
func wrongSecretDialer(t *testing.T) func(string, time.Duration) (net.Conn, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := mux.New(ln, mux.Config{Secret: []byte("not the cluster's secret at all"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		return m.Dial(addr, mux.HeaderRaft, timeout)
	}
}
