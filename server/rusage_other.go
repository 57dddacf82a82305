//go:build !unix

package server

// cpuFields writes INFO cpu's fields as zeros where getrusage(2) is not
// available (rusage_unix.go has the real ones).
func cpuFields(kv func(string, any)) {
	for _, f := range []string{"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"} {
		kv(f, "0.000000")
	}
}
