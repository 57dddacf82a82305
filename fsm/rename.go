package fsm

import (
	"bytes"

	"github.com/redcell/redcell/request"
)

// RENAME and RENAMENX: the key's whole record — kind, fixed fields, value
// and expiry — moves to the new name, so a limiter key goes on deciding
// exactly as it would have under its old name, and any family's key moves
// alike. Redis 7.0's order: a missing source is ERR no such key whatever
// the destination; renaming a key to itself changes nothing (RENAME +OK,
// RENAMENX 0); RENAMENX onto a live key answers 0 and changes nothing.

// renameValid: exactly a source and a destination, and a destination that
// fits a snapshot record (it is stored).
func renameValid(r *request.Request) string {
	switch {
	case len(r.Keys) != 2:
		return "a rename takes two keys"
	case r.NArgs != 0:
		return "a rename takes no arguments"
	case len(r.Keys[1]) > maxSnapshotKey:
		return "key longer than a snapshot can hold"
	}
	return ""
}

func (f *FSM) rename(r *request.Request, now int64, res *request.Result) {
	src, dst := r.Keys[0], r.Keys[1]
	st, live := f.store.GetValue(src, now, f.renameBuf)
	if !live {
		res.SetErr(request.ErrNoSuchKey)
		return
	}
	f.renameBuf = st.Val[:0] // reuse the copy's buffer for the next rename
	nx := r.Code == request.RenameNX
	if bytes.Equal(src, dst) {
		if nx {
			res.SetInt(0)
		} else {
			res.Kind = request.KindOK
		}
		return
	}
	if nx {
		if _, taken := f.store.Get(dst, now); taken {
			res.SetInt(0)
			return
		}
	}
	f.store.Delete(src, now)
	f.store.Put(dst, st) // copies the key and the value
	if nx {
		res.SetInt(1)
	} else {
		res.Kind = request.KindOK
	}
}
