package sfnmock

import "github.com/seatsaga/seatsaga/internal/twin/asl"

// The local engine consults a *Config through asl.TaskMocker.
var _ asl.TaskMocker = (*Config)(nil)
