package sweeper

// Machine is the unit tests' state machine ARN, for the external test package
// (sweeper_ddb_test.go).
const Machine = machine
