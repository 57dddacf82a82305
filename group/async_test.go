package group

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redcell/redcell/gcra"
	"github.com/redcell/redcell/request"
)

// TestProposeAndReadAsync: batches proposed without waiting are all
// answered once, through their callbacks, with the results Propose would
// give; async reads queued together are answered after them, each once;
// after shutdown a proposal is answered ErrShutdown at once.
func TestProposeAndReadAsync(t *testing.T) {
	n := openSingle(t, nil)
	l := NewLocal(n.g, nil)
	p, err := gcra.NewParams(15, 30, 60, 1)
	if err != nil {
		t.Fatal(err)
	}
	const calls = 64
	var wg sync.WaitGroup
	errs := make(chan error, 2*calls)
	answered := make([]int, calls)
	var mu sync.Mutex
	for i := range calls {
		reqs := []request.Request{throttleReq([]byte(fmt.Sprintf("k%d", i)), p), throttleReq([]byte(fmt.Sprintf("k%d", i)), p)}
		res := make([]request.Result, 2)
		wg.Add(1)
		l.ProposeAsync(reqs, res, func(err error) {
			defer wg.Done()
			mu.Lock()
			answered[i]++
			mu.Unlock()
			switch {
			case err != nil:
				errs <- fmt.Errorf("batch %d: %w", i, err)
			case res[0].Err != request.ErrNone || res[0].Ints[0] != 0 || res[1].Ints[2] != res[0].Ints[2]-1:
				errs <- fmt.Errorf("batch %d: results %+v", i, res)
			}
		})
	}
	wg.Wait()
	for i, a := range answered {
		if a != 1 {
			t.Fatalf("batch %d answered %d times", i, a)
		}
	}
	for i := range calls {
		reqs := []request.Request{peekReq([]byte(fmt.Sprintf("k%d", i)), p)}
		res := make([]request.Result, 1)
		wg.Add(1)
		l.ReadAsync(reqs, res, func(err error) {
			defer wg.Done()
			if err != nil || res[0].Err != request.ErrNone || res[0].Kind != request.KindThrottle {
				errs <- fmt.Errorf("read %d: %+v, %v", i, res[0], err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	if err := n.g.Shutdown(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	l.ProposeAsync([]request.Request{throttleReq([]byte("late"), p)}, make([]request.Result, 1), func(err error) { done <- err })
	select {
	case err := <-done:
		if !errors.Is(err, request.ErrShutdown) && !errors.Is(err, request.ErrNoLeader) {
			t.Fatalf("after shutdown: %v, want ErrShutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a proposal after shutdown was not answered")
	}
}
