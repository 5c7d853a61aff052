// Package childproc starts the twin's child processes (DynamoDB Local, function binaries) so
// that the kernel's parent-death signal works: Linux sends Pdeathsig when the thread that forked
// the child exits, not the process, and the Go runtime may end an idle thread at any time. The
// fork therefore happens on a thread locked for exactly as long as the child lives.
package childproc

import (
	"os/exec"
	"runtime"
)

// Child is a started process being waited for.
type Child struct {
	done chan struct{}
	err  error
}

// Done is closed once the process has exited and been reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// Err is Wait's answer; read it after Done is closed.
func (c *Child) Err() error { return c.err }

// Start starts cmd from a locked OS thread that stays locked until the process exits, and waits
// for it there.
func Start(cmd *exec.Cmd) (*Child, error) {
	c := &Child{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		started <- nil
		c.err = cmd.Wait()
		close(c.done)
		// The thread stays locked: it ends with this goroutine, as the child already has.
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}
