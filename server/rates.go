package server

import (
	"sync"
	"time"
)

// rates turns the node's monotonically growing counters into per-second
// rates for INFO (instantaneous_ops_per_sec, fsyncs per second, decisions per
// entry), the way Redis's serverCron samples its counters. A ticker samples
// once a second; INFO reads the last completed second.
type rates struct {
	mu   sync.Mutex
	last rateSample
	cur  rateView
	stop chan struct{}
	done chan struct{}
}

// rateSample is one reading of the counters.
type rateSample struct {
	at       time.Time
	commands int64
	ops      uint64 // requests proposed to the log
	entries  uint64 // log entries proposed
	fsyncs   uint64
	netOut   int64
}

// rateView is what INFO shows: rates over the last sampled second.
type rateView struct {
	OpsPerSec       float64
	DecisionsPerSec float64
	EntriesPerSec   float64
	FsyncsPerSec    float64
	OpsPerEntry     float64
	NetOutKbps      float64
}

func newRates(sample func() rateSample, every time.Duration) *rates {
	r := &rates{stop: make(chan struct{}), done: make(chan struct{}), last: sample()}
	go func() {
		defer close(r.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.record(sample())
			}
		}
	}()
	return r
}

func (r *rates) record(s rateSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	dt := s.at.Sub(r.last.at).Seconds()
	if dt <= 0 {
		return
	}
	v := rateView{
		OpsPerSec:       float64(s.commands-r.last.commands) / dt,
		DecisionsPerSec: float64(s.ops-r.last.ops) / dt,
		EntriesPerSec:   float64(s.entries-r.last.entries) / dt,
		FsyncsPerSec:    float64(s.fsyncs-r.last.fsyncs) / dt,
		NetOutKbps:      float64(s.netOut-r.last.netOut) / dt / 1024,
	}
	if e := s.entries - r.last.entries; e > 0 {
		v.OpsPerEntry = float64(s.ops-r.last.ops) / float64(e)
	}
	r.cur, r.last = v, s
}

func (r *rates) view() rateView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

func (r *rates) close() {
	close(r.stop)
	<-r.done
}
