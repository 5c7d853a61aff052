package sweeper

// Test doubles for the external test package (sweeper_ddb_test.go is package sweeper_test
// because it builds the saga's steps with internal/app, which imports this package).
type FakeSFN = fakeSFN

const Machine = machine
