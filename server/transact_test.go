package server

import "github.com/redcell/redcell/request"

// The test backends commit an atomic unit as they commit a pipeline: one
// call, one batch.

func (b *stubBackend) Transact(reqs []request.Request, res []request.Result) error {
	return b.Propose(reqs, res)
}

func (b *heldBackend) Transact(reqs []request.Request, res []request.Result) error {
	return b.Propose(reqs, res)
}
