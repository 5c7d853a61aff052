package childproc_test

import "runtime"

func lockOSThread() { runtime.LockOSThread() }

// lockAndExit locks the calling goroutine's thread and returns without unlocking, so the
// runtime ends the thread when the goroutine exits.
func lockAndExit() { runtime.LockOSThread() }
