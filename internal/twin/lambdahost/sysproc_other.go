//go:build !linux

package lambdahost

import (
	"os"
	"syscall"
)

// sysProcAttr sets nothing outside Linux, where Lambda does not run: there Stop kills the
// process itself but not what it started.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killProcess kills the process itself.
func killProcess(p *os.Process) { _ = p.Kill() }

// killLeftovers does nothing: without a process group there is nothing safe to signal once
// the process was reaped.
func killLeftovers(int) {}
