// Command goodbye is a second tiny program, so the tests build more than one package at once.
package main

import "os"

func main() { os.Exit(0) }
