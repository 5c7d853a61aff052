// Command initerror is a test function standing for a custom runtime that reports its init
// failure to the Runtime API's /init/error, as aws-lambda-go never does, and then exits.
package main

import (
	"net/http"
	"os"
	"strings"
)

func main() {
	url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
	req, err := http.NewRequest(http.MethodPost, url,
		strings.NewReader(`{"errorMessage":"cannot load the handler","errorType":"Runtime.HandlerNotFound"}`))
	if err != nil {
		os.Exit(4)
	}
	req.Header.Set("Lambda-Runtime-Function-Error-Type", "Runtime.HandlerNotFound")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		os.Exit(5)
	}
	os.Exit(2)
}
