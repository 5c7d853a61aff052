package reservation

import "testing"

func TestUnsettled(t *testing.T) {
	cases := []struct {
		name      string
		inventory InventoryState
		payment   PaymentState
		want      bool
	}{
		{"unknown while held", Held, UnknownNeedsReconciliation, true},
		{"unknown after release", Released, UnknownNeedsReconciliation, true},
		{"authorizing while the hold keeps the seats", PaymentPending, Authorizing, false},
		{"authorizing after release", Released, Authorizing, true},
		{"confirmed awaiting capture", Confirmed, Authorized, true},
		{"capture pending", Confirmed, CapturePending, true},
		{"paid and confirmed", Confirmed, Paid, false},
		{"paid for released seats", Released, Paid, true},
		{"declined", Released, Failed, false},
		{"voided", Released, Canceled, false},
		{"refunded", Released, Refunded, false},
		{"not started", Held, NotStarted, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Reservation{Inventory: c.inventory, Payment: c.payment}
			if got := r.Unsettled(); got != c.want {
				t.Fatalf("Unsettled() = %v, want %v", got, c.want)
			}
		})
	}
}
