package inventory

// WithoutAdmissionLease returns a copy of st whose admission gate drops the lease clause from
// its condition, for the control test that shows the clause is what turns a second buyer away.
func WithoutAdmissionLease(st *Store) *Store {
	c := *st
	c.gateWithoutLease = true
	return &c
}
