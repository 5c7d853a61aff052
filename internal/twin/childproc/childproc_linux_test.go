package childproc_test

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/twin/childproc"
)

// A child started with a parent-death signal outlives the thread churn of the Go runtime: it
// keeps running while the test starts and ends many goroutines that lock and drop threads.
func TestAChildWithAParentDeathSignalSurvivesThreadChurn(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c, err := childproc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); <-c.Done() }()
	// A goroutine that exits while locked to its thread makes the runtime end that thread.
	for i := 0; i < 50; i++ {
		done := make(chan struct{})
		go func() { lockAndExit(); close(done) }()
		<-done
	}
	select {
	case <-c.Done():
		t.Fatalf("the child died with its forking thread: %v", c.Err())
	case <-time.After(200 * time.Millisecond):
	}
}

// The control: a child forked from a thread that then exits is killed by its death signal.
func TestAChildForkedFromAnExitingThreadIsKilled(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	forked := make(chan error, 1)
	go func() {
		lockOSThread()
		forked <- cmd.Start()
		// Exiting while locked ends the thread, and the kernel signals the child.
	}()
	if err := <-forked; err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the child outlived the thread that forked it: the control does not show the hazard")
	}
}
