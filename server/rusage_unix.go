//go:build unix

package server

import (
	"fmt"
	"syscall"
)

// cpuFields writes INFO cpu as Redis 7.0 does, from getrusage(2): the
// process's and its children's system and user time, in seconds with
// microseconds. Redis also reports used_cpu_*_main_thread (RUSAGE_THREAD
// of its event loop); Redcell has no main thread (a goroutine per
// connection on any OS thread), and the calling thread's figure would be
// whichever thread ran INFO, so those two fields are left out.
func cpuFields(kv func(string, any)) {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) string { return fmt.Sprintf("%d.%06d", int64(t.Sec), int64(t.Usec)) }
	kv("used_cpu_sys", tv(self.Stime))
	kv("used_cpu_user", tv(self.Utime))
	kv("used_cpu_sys_children", tv(children.Stime))
	kv("used_cpu_user_children", tv(children.Utime))
}
