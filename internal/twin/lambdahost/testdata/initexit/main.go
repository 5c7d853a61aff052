// Command initexit is a test function that fails during init, as a function does whose
// configuration is missing: it logs why and exits before reaching lambda.Start.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	fmt.Println("initexit: loading configuration")
	if os.Getenv("INITEXIT_REQUIRED") == "" {
		fmt.Fprintln(os.Stderr, "initexit: INITEXIT_REQUIRED is not set")
		os.Exit(3)
	}
	lambda.Start(func() error { return nil })
}
