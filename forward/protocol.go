// Package forward carries requests from a node that does not lead to the
// node that does, and the answers back, so that any node serves any client.
// A follower's connections hand their batches to a Client; the Client sends
// them as frames over a few authenticated peer connections to the leader's
// Server, which proposes them through its Raft group and answers each frame.
// See DESIGN.md.
package forward

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/redcell/redcell/request"
)

// Wire format, version 2. Both directions are a stream of frames:
//
//	uvarint  length of the rest of the frame
//	uvarint  call ID (chosen by the client, echoed by the server)
//	byte     kind (request) or status (response)
//	payload
//
// Request kinds and payloads; every request names the Raft group it is for
// (0 while a node runs one group; a receiver that runs no such group
// answers request.FailUnknownGroup):
//
//	kindPropose, kindRead: uvarint group, uvarint n, then n requests
//	                       (request.Append: the encoding log entries carry)
//	kindAdmin:             uvarint group, uvarint n, n × (uvarint len,
//	                       bytes): command, arguments
//	kindPing:              uvarint group (always 0): answered statusOK with
//	                       an empty payload by the connection's reader
//	                       itself, never through a group (reach.go). A
//	                       build before pings answers it statusError
//	                       (FailRefused, "unknown call kind"): an answer
//	                       all the same, which is all a ping asks for.
//
// Response statuses and payloads:
//
//	statusOK:     the results (one per request, request.AppendResult) for
//	              kindPropose/kindRead; uvarint len + text for kindAdmin
//	statusError:  byte request.FailCode, uvarint len + detail: the
//	              *request.Failure as the leader's group made it
//
// A connection is opened with mux.HeaderForward and the cluster-secret
// handshake, so both ends are cluster members. Calls on one connection are
// answered in any order; the client matches them by ID.

const (
	kindPropose byte = 1
	kindRead    byte = 2
	kindAdmin   byte = 3
	kindPing    byte = 4

	statusOK    byte = 0
	statusError byte = 1
)

// MaxFrame bounds one frame. A frame carries one pipeline's batch, whose
// requests the parser bounded at 16 MiB each; a peer is authenticated, but
// the reader still grows its buffer only as bytes arrive.
const MaxFrame = 1 << 30

// headroom is the space a frame is built after, so that its length and ID
// can be put in front of the body once they are known without moving the
// body (see startFrame and sealFrame).
const headroom = 2 * binary.MaxVarintLen64

var errFrameTooBig = errors.New("forward: frame larger than MaxFrame")

// readFrame reads one frame into buf (grown as bytes arrive, never from the
// declared length) and returns its ID, kind/status byte and payload.
func readFrame(r *bufio.Reader, buf []byte) (id uint64, kind byte, payload, newBuf []byte, err error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, 0, nil, buf, err
	}
	if n > MaxFrame {
		return 0, 0, nil, buf, errFrameTooBig
	}
	buf = buf[:0]
	for remaining := int(n); remaining > 0; {
		chunk := min(remaining, 64<<10)
		start := len(buf)
		buf = slices.Grow(buf, chunk)[:start+chunk]
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return 0, 0, nil, buf, fmt.Errorf("forward: reading a frame: %w", err)
		}
		remaining -= chunk
	}
	id, w := binary.Uvarint(buf)
	if w <= 0 || w >= len(buf) {
		return 0, 0, nil, buf, errors.New("forward: corrupt frame header")
	}
	return id, buf[w], buf[w+1:], buf, nil
}

// appendFrame appends a frame with the given body (kind byte onwards is
// body[0:]) to b. The body is built after a placeholder and moved once.
func appendFrame(b []byte, id uint64, body []byte) []byte {
	var hdr [2 * binary.MaxVarintLen64]byte
	h := binary.AppendUvarint(hdr[:0], id)
	b = binary.AppendUvarint(b, uint64(len(h)+len(body)))
	b = append(b, h...)
	return append(b, body...)
}

// startFrame begins a frame whose body opens with kind: the body is
// appended to the result, then sealFrame puts the header in front. The body
// is encoded once, in place.
func startFrame(kind byte, sizeHint int) []byte {
	b := make([]byte, headroom, headroom+1+sizeHint)
	return append(b, kind)
}

// sealFrame writes the length and ID into the headroom of a frame begun by
// startFrame and returns the frame.
func sealFrame(b []byte, id uint64) []byte {
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], id)
	var lb [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(lb[:], uint64(h+len(b)-headroom))
	start := headroom - h - l
	copy(b[start:], lb[:l])
	copy(b[start+l:], hdr[:h])
	return b[start:]
}

// readGroup splits a call's payload into the group it names and the rest.
func readGroup(payload []byte) (uint64, []byte, error) {
	g, w := binary.Uvarint(payload)
	if w <= 0 {
		return 0, nil, errors.New("forward: corrupt group id")
	}
	return g, payload[w:], nil
}

// appendRequests appends a batch payload.
func appendRequests(b []byte, reqs []request.Request) []byte {
	b = binary.AppendUvarint(b, uint64(len(reqs)))
	for i := range reqs {
		b = request.Append(b, &reqs[i])
	}
	return b
}

// decodeRequests decodes a batch payload into reqs (reused). Keys alias
// payload. Each request needs its own key slice for MultiKey codes, so
// those are copied out of the decoder's scratch.
func decodeRequests(payload []byte, reqs []request.Request) ([]request.Request, error) {
	n, w := binary.Uvarint(payload)
	if w <= 0 || n > uint64(len(payload)) {
		return reqs, errors.New("forward: corrupt request count")
	}
	payload = payload[w:]
	reqs = reqs[:0]
	var dec request.Decoder
	for i := uint64(0); i < n; i++ {
		var r request.Request
		var err error
		if payload, err = dec.Decode(payload, &r); err != nil {
			return reqs, err
		}
		if r.Keys != nil {
			r.Keys = append([][]byte(nil), r.Keys...)
		}
		reqs = append(reqs, r)
	}
	if len(payload) != 0 {
		return reqs, fmt.Errorf("forward: %d bytes after the last request", len(payload))
	}
	return reqs, nil
}

func appendResults(b []byte, res []request.Result) []byte {
	for i := range res {
		b = request.AppendResult(b, &res[i])
	}
	return b
}

func decodeResults(payload []byte, res []request.Result) error {
	for i := range res {
		var err error
		if payload, err = request.DecodeResult(payload, &res[i]); err != nil {
			return err
		}
	}
	if len(payload) != 0 {
		return fmt.Errorf("forward: %d bytes after the last result", len(payload))
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readString(b []byte) (string, []byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil, errors.New("forward: corrupt string")
	}
	end := w + int(n)
	return string(b[w:end]), b[end:], nil
}

// appendError appends an error response body: the failure's code byte and
// detail, as they are.
func appendError(b []byte, f *request.Failure) []byte {
	b = append(b, statusError, byte(f.Code))
	return appendString(b, f.Detail)
}

// decodeError returns the *request.Failure an error response carries.
func decodeError(payload []byte) error {
	if len(payload) < 1 {
		return errors.New("forward: corrupt error response")
	}
	detail, _, err := readString(payload[1:])
	if err != nil {
		return err
	}
	return &request.Failure{Code: request.FailCode(payload[0]), Detail: detail}
}
