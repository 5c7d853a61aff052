package reservation

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func goodRequest() ClaimRequest {
	return ClaimRequest{ReservationID: "res-1", CustomerID: "cust-1", EventID: "show-1", SeatIDs: []string{"A1", "A2"},
		Amount: 4200, Currency: "EUR", HoldDuration: 10 * time.Minute, IdempotencyKey: "key-1", CorrelationID: "corr-1"}
}

func TestValidateClaimRequest(t *testing.T) {
	cases := []struct {
		name      string
		mutate    func(*ClaimRequest)
		limits    Limits
		wantField string // "" means valid
	}{
		{"valid", func(*ClaimRequest) {}, DefaultLimits(), ""},
		{"lowercase currency is fine", func(r *ClaimRequest) { r.Currency = "eur" }, DefaultLimits(), ""},
		{"zero limits mean defaults", func(*ClaimRequest) {}, Limits{}, ""},
		{"no seats", func(r *ClaimRequest) { r.SeatIDs = nil }, DefaultLimits(), "seatIds"},
		{"empty seat id", func(r *ClaimRequest) { r.SeatIDs = []string{"A1", ""} }, DefaultLimits(), "seatIds"},
		{"duplicate seat", func(r *ClaimRequest) { r.SeatIDs = []string{"A1", "A2", "A1"} }, DefaultLimits(), "seatIds"},
		{"seat id with #", func(r *ClaimRequest) { r.SeatIDs = []string{"A#1"} }, DefaultLimits(), "seatIds"},
		{"seat id with space", func(r *ClaimRequest) { r.SeatIDs = []string{"A 1"} }, DefaultLimits(), "seatIds"},
		{"too many seats", func(r *ClaimRequest) { r.SeatIDs = seatIDs(11) }, DefaultLimits(), "seatIds"},
		{"configured maximum", func(r *ClaimRequest) { r.SeatIDs = seatIDs(3) }, Limits{MaxSeats: 2}, "seatIds"},
		{"transaction limit caps the maximum", func(r *ClaimRequest) { r.SeatIDs = seatIDs(99) }, Limits{MaxSeats: 500}, "seatIds"},
		{"zero amount", func(r *ClaimRequest) { r.Amount = 0 }, DefaultLimits(), "amount"},
		{"negative amount", func(r *ClaimRequest) { r.Amount = -5 }, DefaultLimits(), "amount"},
		{"bad currency", func(r *ClaimRequest) { r.Currency = "EURO" }, DefaultLimits(), "currency"},
		{"digits in currency", func(r *ClaimRequest) { r.Currency = "E1R" }, DefaultLimits(), "currency"},
		{"zero hold", func(r *ClaimRequest) { r.HoldDuration = 0 }, DefaultLimits(), "holdDuration"},
		{"negative hold", func(r *ClaimRequest) { r.HoldDuration = -time.Minute }, DefaultLimits(), "holdDuration"},
		{"endless hold", func(r *ClaimRequest) { r.HoldDuration = 48 * time.Hour }, DefaultLimits(), "holdDuration"},
		{"no event", func(r *ClaimRequest) { r.EventID = "" }, DefaultLimits(), "eventId"},
		{"event with #", func(r *ClaimRequest) { r.EventID = "a#b" }, DefaultLimits(), "eventId"},
		{"no customer", func(r *ClaimRequest) { r.CustomerID = "" }, DefaultLimits(), "customerId"},
		{"no reservation id", func(r *ClaimRequest) { r.ReservationID = "" }, DefaultLimits(), "reservationId"},
		{"no idempotency key", func(r *ClaimRequest) { r.IdempotencyKey = "" }, DefaultLimits(), "idempotencyKey"},
		{"huge id", func(r *ClaimRequest) { r.CustomerID = strings.Repeat("x", 129) }, DefaultLimits(), "customerId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := goodRequest()
			c.mutate(&req)
			err := req.Validate(c.limits)
			if c.wantField == "" {
				if err != nil {
					t.Fatalf("valid request refused: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValidationError, got %v", err)
			}
			if !ve.Has(c.wantField) {
				t.Fatalf("problems %+v do not name %s", ve.Problems, c.wantField)
			}
			if _, err := NewReservation(req, c.limits, t0); !errors.As(err, &ve) {
				t.Fatalf("NewReservation accepted an invalid request: %v", err)
			}
		})
	}
}

func TestValidationListsEveryProblem(t *testing.T) {
	err := ClaimRequest{}.Validate(DefaultLimits())
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v", err)
	}
	for _, f := range []string{"reservationId", "customerId", "eventId", "idempotencyKey", "seatIds", "amount", "currency", "holdDuration"} {
		if !ve.Has(f) {
			t.Errorf("no problem reported for %s", f)
		}
	}
}

func seatIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "S" + strconv.Itoa(i)
	}
	return out
}

func TestRequestHash(t *testing.T) {
	a := goodRequest()
	b := goodRequest()
	b.SeatIDs = []string{"A2", "A1"}
	b.IdempotencyKey = "other"
	b.CorrelationID = "other"
	b.Currency = "eur"
	if a.Hash() != b.Hash() {
		t.Fatal("seat order, key, correlation id or currency case changed the hash")
	}
	for name, mutate := range map[string]func(*ClaimRequest){
		"seat":     func(r *ClaimRequest) { r.SeatIDs = []string{"A1", "A3"} },
		"amount":   func(r *ClaimRequest) { r.Amount++ },
		"customer": func(r *ClaimRequest) { r.CustomerID = "cust-2" },
		"event":    func(r *ClaimRequest) { r.EventID = "show-2" },
		"hold":     func(r *ClaimRequest) { r.HoldDuration += time.Second },
		"currency": func(r *ClaimRequest) { r.Currency = "USD" },
		"id":       func(r *ClaimRequest) { r.ReservationID = "res-2" },
		"boundary": func(r *ClaimRequest) { r.SeatIDs = []string{"A1A2"} },
	} {
		c := goodRequest()
		mutate(&c)
		if c.Hash() == a.Hash() {
			t.Errorf("changing %s kept the hash", name)
		}
	}
}

func TestNewReservation(t *testing.T) {
	req := goodRequest()
	req.Currency = "eur"
	local := t0.In(time.FixedZone("CET", 3600))
	r, err := NewReservation(req, DefaultLimits(), local)
	if err != nil {
		t.Fatal(err)
	}
	if r.Inventory != Held || r.Payment != NotStarted || r.Version != 1 {
		t.Fatalf("new reservation %s/%s v%d", r.Inventory, r.Payment, r.Version)
	}
	if !r.HoldExpiresAt.Equal(t0.Add(10*time.Minute)) || r.HoldExpiresAt.Location() != time.UTC {
		t.Fatalf("hold deadline %v", r.HoldExpiresAt)
	}
	if r.Currency != "EUR" || r.RequestHash != req.Hash() || r.IdempotencyKey != "key-1" {
		t.Fatalf("fields %+v", r)
	}
	req.SeatIDs[0] = "Z9"
	if r.SeatIDs[0] != "A1" {
		t.Fatal("reservation shares the request's seat slice")
	}
}

func TestIDFor(t *testing.T) {
	a := IDFor("c1", "k1")
	if a != IDFor("c1", "k1") {
		t.Fatal("IDFor is not deterministic")
	}
	for _, other := range []string{IDFor("c2", "k1"), IDFor("c1", "k2"), IDFor("c1k", "1")} {
		if other == a {
			t.Fatal("different inputs share an id")
		}
	}
	if idProblem(a) != "" {
		t.Fatalf("derived id %q is not a valid id: %s", a, idProblem(a))
	}
}
