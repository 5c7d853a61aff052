// Package boot holds the boot test of the deployment: every function of the synthesized
// template, built as the real binary and started with exactly the environment the template
// gives it (its references resolved against the local stack), must reach the Lambda runtime
// loop and serve a real event. It has no code of its own; see boot_test.go.
package boot
