package lambdahost

import (
	"os"
	"syscall"
)

// sysProcAttr puts a function process in a process group of its own, so that Stop can end
// whatever it started too, and has the kernel kill it should this process die without
// stopping it (a test binary killed at its timeout runs no cleanups).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcess sends SIGKILL to the function's process group: Lambda gives a runtime without
// extensions no SIGTERM, and SIGKILL cannot be ignored.
func killProcess(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

// killLeftovers ends what remains of the process group led by pid after its leader exited.
func killLeftovers(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
