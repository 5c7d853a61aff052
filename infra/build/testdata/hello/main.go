// Command hello is a tiny program the build tests compile instead of a real Lambda.
package main

import "fmt"

func main() { fmt.Println("hello") }
