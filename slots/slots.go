// Package slots names the parts of the sharded keyspace: Redis Cluster's
// 16,384 hash slots, the key → slot function clients and servers share,
// and the Raft groups that own slots. It is a leaf: every layer that routes,
// stores or checks by slot or group (request, raftstore, forward, fsm, node,
// server) imports it, and it imports nothing of Redcell's. See DESIGN.md.
package slots

// GroupID names one Raft group. Every group of a cluster has the same ID on
// every node that is a member of it; the ID is part of each of the group's
// keys in the node's Pebble database (raftstore) and of every forwarded call
// (forward). Group 0 is the data group of a cluster with one group, and
// what a data dir from before groups becomes.
type GroupID uint32

// Count is how many hash slots the keyspace has, as in Redis Cluster.
const Count = 16384

// Slot is a hash slot, 0 to Count-1.
type Slot uint16

// KeySlot is Redis Cluster's slot of key: CRC16 (XMODEM) of the key, or of
// its hash tag, mod 16384. The hash tag is the part between the first '{'
// and the first '}' after it, when that part is not empty, so that
// "{user42}:a" and "{user42}:b" share a slot; "{}x" and "x{" hash whole.
// It allocates nothing.
func KeySlot(key []byte) Slot {
	return Slot(crc16(hashTag(key)) & (Count - 1))
}

// KeySlotString is KeySlot of a string key.
func KeySlotString(key string) Slot {
	return Slot(crc16String(hashTagString(key)) & (Count - 1))
}

// hashTag is the part of key that is hashed: the tag when there is a
// non-empty one, else the whole key (Redis's keyHashSlot).
func hashTag(key []byte) []byte {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key // "{}": no tag
				}
				return key[i+1 : j]
			}
		}
		return key // a '{' without a later '}'
	}
	return key
}

func hashTagString(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key
				}
				return key[i+1 : j]
			}
		}
		return key
	}
	return key
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection, no final xor), the checksum Redis Cluster hashes keys with.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^c]
	}
	return crc
}

func crc16String(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

// crc16Table holds the CRC of every byte value, so that each key byte costs
// one lookup.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
