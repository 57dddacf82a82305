// Package systemtest holds end-to-end tests of the real redcell binary: it is
// built once per `go test` run, started as separate processes on loopback
// ports with their own data directories, driven over RESP (a small client of
// its own, go-redis, redis-cli and redis-benchmark), killed by PID and
// restarted. All code lives in _test.go files; see DESIGN.md for what is
// covered and how time is injected.
package systemtest
