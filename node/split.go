package node

import (
	"errors"
	"sync"

	"github.com/redcell/redcell/request"
	"github.com/redcell/redcell/slots"
)

// Splitting a call over groups and merging the answers.
//
// A pipeline's requests are independent (server.Decider), so a call whose
// requests fall in several groups becomes one call per group, each holding
// that group's requests in their order; the groups decide them at once,
// each in its own entry, and the answers go back in the pipeline's order. A
// request that its code lets split (request/routing.go) is cut into one
// request per group holding that group's keys (DEL, EXISTS, TOUCH, MGET), or
// copied to every group (DBSIZE, KEYS, FLUSHALL, the script cache's
// commands); its parts' answers are merged by the code's rule. SCAN goes to
// the one group its cursor names.
//
// A group whose part fails fails only the requests it carried: the call
// then returns a *request.Partial naming them (a request split over a group
// that failed and one that did not gets the failure, which says what the
// client may assume). When every part fails the call fails whole.
//
// This is the path of G > 1 only: with one group the router hands the call
// to group 0 untouched, allocating nothing.

// groupCall is one group's route method: Propose, Read or ReadLocal.
type groupCall func(rt *groupRoute, reqs []request.Request, res []request.Result) error

// part is one group's share of a split call.
type part struct {
	reqs []request.Request
	res  []request.Result
	err  error
}

// place is where one of a request's answers is: in part g, at index i.
type place struct {
	g, i int
}

// pieces says where a request's answer comes from: one place for a whole
// request, several for one split or copied, with (for MGET) the original
// position of every key of every piece.
type pieces struct {
	at   []place
	keys [][]int // SplitInOrder: keys[j] are the positions of piece j's keys
	// scanGroup is the group a SCAN walks (its cursor is rebuilt from it).
	scanGroup int
	done      bool // answered without a group (a SCAN cursor past the last group)
}

// split carries reqs to their groups with call and fills res.
func (r *router) split(reqs []request.Request, res []request.Result, call groupCall) error {
	groups := len(r.routes)
	// The common case: every request whole, in one group.
	if g, ok := r.oneGroup(reqs); ok {
		return call(r.routes[g], reqs, res)
	}
	parts := make([]part, groups)
	ps := make([]pieces, len(reqs))
	add := func(i, g int, req request.Request) {
		ps[i].at = append(ps[i].at, place{g, len(parts[g].reqs)})
		parts[g].reqs = append(parts[g].reqs, req)
	}
	for i := range reqs {
		req := &reqs[i]
		switch req.Code.SplitOf() {
		case request.SplitEveryGroup:
			if req.Code.MergeOf() == request.MergeCursor {
				g, inner := request.ScanCursor(uint64(req.Args[0]), groups)
				if g >= groups {
					ps[i].done = true // past the last group: the scan is over
					res[i] = request.Result{Kind: request.KindScan}
					continue
				}
				sub := *req
				sub.Args[0] = int64(inner)
				ps[i].scanGroup = g
				add(i, g, sub)
				continue
			}
			for g := range groups {
				add(i, g, *req)
			}
		case request.SplitCount, request.SplitInOrder:
			if _, keyed, cross := req.Slot(); !keyed || !cross {
				add(i, int(r.groupOf(req)), *req)
				continue
			}
			r.splitKeys(req, i, &ps[i], add)
		default:
			add(i, int(r.groupOf(req)), *req)
		}
	}

	var wg sync.WaitGroup
	last := -1
	for g := range parts {
		if len(parts[g].reqs) == 0 {
			continue
		}
		parts[g].res = make([]request.Result, len(parts[g].reqs))
		if last >= 0 {
			wg.Add(1)
			go func(p *part, rt *groupRoute) {
				defer wg.Done()
				p.err = call(rt, p.reqs, p.res)
			}(&parts[last], r.routes[last])
		}
		last = g
	}
	if last >= 0 {
		parts[last].err = call(r.routes[last], parts[last].reqs, parts[last].res)
	}
	wg.Wait()

	var errs []error
	failed := 0
	for i := range reqs {
		if ps[i].done {
			continue
		}
		if err := mergeInto(&reqs[i], &res[i], &ps[i], parts, groups); err != nil {
			if errs == nil {
				errs = make([]error, len(reqs))
			}
			errs[i] = err
			failed++
		}
	}
	switch {
	case failed == 0:
		return nil
	case failed == len(reqs):
		for _, e := range errs {
			return e // every request failed: the call fails whole
		}
	}
	return &request.Partial{Errs: errs}
}

// oneGroup reports whether every request goes whole to one group, and which.
func (r *router) oneGroup(reqs []request.Request) (int, bool) {
	g := -1
	for i := range reqs {
		req := &reqs[i]
		sp := req.Code.SplitOf()
		if sp == request.SplitEveryGroup {
			return 0, false
		}
		s, keyed, cross := req.Slot()
		if cross && sp != request.SplitNone {
			return 0, false
		}
		rg := 0
		if keyed {
			rg = int(r.slots.group(s))
		}
		if g >= 0 && rg != g {
			return 0, false
		}
		g = rg
	}
	return max(g, 0), true
}

// splitKeys cuts a SplitCount or SplitInOrder request into one request per
// group holding that group's keys, in their order.
func (r *router) splitKeys(req *request.Request, i int, p *pieces, add func(i, g int, req request.Request)) {
	byGroup := map[slots.GroupID][]int{}
	var order []slots.GroupID
	for k, key := range req.Keys {
		g := r.slots.group(slots.KeySlot(key))
		if _, seen := byGroup[g]; !seen {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], k)
	}
	for _, g := range order {
		sub := *req
		sub.Keys = make([][]byte, len(byGroup[g]))
		for j, k := range byGroup[g] {
			sub.Keys[j] = req.Keys[k]
		}
		p.keys = append(p.keys, byGroup[g])
		add(i, int(g), sub)
	}
}

// mergeInto fills *out with the answer of a request from its pieces, or
// returns the failure of a group that carried one of them.
func mergeInto(req *request.Request, out *request.Result, p *pieces, parts []part, groups int) error {
	for _, at := range p.at {
		if err := parts[at.g].err; err != nil {
			return err
		}
	}
	got := func(j int) *request.Result { return &parts[p.at[j].g].res[p.at[j].i] }
	if len(p.at) == 1 && req.Code.SplitOf() != request.SplitEveryGroup {
		*out = *got(0)
		return nil
	}
	for j := range p.at {
		if got(j).Kind == request.KindError {
			*out = *got(j) // a deterministic error in any part is the answer
			return nil
		}
	}
	switch {
	case req.Code.SplitOf() == request.SplitCount:
		*out = request.Result{Kind: request.KindInt}
		for j := range p.at {
			out.Ints[0] += got(j).Ints[0]
		}
	case req.Code.SplitOf() == request.SplitInOrder:
		items := make([][]byte, len(req.Keys))
		for j := range p.at {
			n := 0
			request.Items(got(j).Data, func(item []byte) {
				if n < len(p.keys[j]) {
					items[p.keys[j][n]] = item
				}
				n++
			})
		}
		*out = request.Result{Kind: got(0).Kind}
		for _, item := range items {
			out.Data = request.AppendItem(out.Data, item)
		}
	default:
		return mergeEveryGroup(req, out, p, got, groups)
	}
	return nil
}

// mergeEveryGroup merges the answers of a request copied to every group
// (or, for SCAN, sent to one), by its code's rule.
func mergeEveryGroup(req *request.Request, out *request.Result, p *pieces, got func(int) *request.Result, groups int) error {
	switch req.Code.MergeOf() {
	case request.MergeSum:
		*out = request.Result{Kind: got(0).Kind}
		for j := range p.at {
			out.Ints[0] += got(j).Ints[0]
		}
	case request.MergeConcat:
		*out = request.Result{Kind: got(0).Kind}
		for j := range p.at {
			out.Data = append(out.Data, got(j).Data...)
		}
	case request.MergeSame:
		*out = *got(0)
	case request.MergeAllOf:
		var all []int64
		for j := range p.at {
			n := 0
			request.IntItems(got(j).Data, func(v int64) {
				if j == 0 {
					all = append(all, v)
				} else if n < len(all) && v != 1 {
					all[n] = 0
				}
				n++
			})
		}
		*out = request.Result{Kind: got(0).Kind}
		for _, v := range all {
			out.Data = request.AppendIntItem(out.Data, v)
		}
	case request.MergeCursor:
		*out = *got(0)
		out.Ints[0] = int64(request.JoinScanCursor(p.scanGroup, uint64(got(0).Ints[0]), groups))
	default:
		return errors.New("node: no merge rule for " + request.Describe(req.Code).Name)
	}
	return nil
}
