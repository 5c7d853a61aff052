package stepfunctions

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// WithoutHostPrefix is an sfn client option for a client of this server: the SDK sends
// StartSyncExecution and TestState to the endpoint's host prefixed with "sync-", as AWS's
// endpoints expect, and a loopback endpoint has no such host. (The AWS CLI's counterpart is
// AWS_DISABLE_HOST_PREFIX_INJECTION=true.)
func WithoutHostPrefix(o *sfn.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("DisableEndpointHostPrefix",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				return next.HandleInitialize(smithyhttp.DisableEndpointHostPrefix(ctx, true), in)
			}), middleware.Before)
	})
}
