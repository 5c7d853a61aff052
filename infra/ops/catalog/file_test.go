package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const goodFile = `{
  "eventId": "concert-2026-06-01",
  "opensAt": "2026-05-01T10:00:00Z",
  "closesAt": "2026-06-01T18:00:00+02:00",
  "seats": [
    {"seatId": "A-1-1", "priceMinor": 5000, "currency": "eur"},
    {"seatId": "A-1-2", "priceMinor": 5000, "currency": "EUR"},
    {
      "seatId": "B-1-1",
      "priceMinor": 3500,
      "currency": "EUR"
    }
  ]
}
`

func TestParseReadsEventWindowAndSeatsWithTheirLines(t *testing.T) {
	f, err := Parse("seats.json", []byte(goodFile))
	if err != nil {
		t.Fatal(err)
	}
	if f.EventID != "concert-2026-06-01" {
		t.Errorf("event %q", f.EventID)
	}
	if want := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC); !f.OpensAt.Equal(want) {
		t.Errorf("opensAt %v, want %v", f.OpensAt, want)
	}
	if want := time.Date(2026, 6, 1, 16, 0, 0, 0, time.UTC); !f.ClosesAt.Equal(want) {
		t.Errorf("closesAt %v, want %v", f.ClosesAt, want)
	}
	if len(f.Seats) != 3 {
		t.Fatalf("seats %+v", f.Seats)
	}
	for i, want := range []Seat{
		{Line: 6}, {Line: 7}, {Line: 8},
	} {
		if f.Seats[i].Line != want.Line {
			t.Errorf("seat %d on line %d, want %d", i, f.Seats[i].Line, want.Line)
		}
	}
	if f.Seats[0].Currency != "EUR" || f.Seats[2].PriceMinor != 3500 {
		t.Errorf("seats %+v: want currencies upper-cased and prices kept", f.Seats)
	}
}

func TestParseWithoutAWindowIsUnbounded(t *testing.T) {
	f, err := Parse("s.json", []byte(`{"eventId":"e1","seats":[{"seatId":"1","priceMinor":50,"currency":"usd"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !f.OpensAt.IsZero() || !f.ClosesAt.IsZero() {
		t.Errorf("window %v..%v, want unbounded", f.OpensAt, f.ClosesAt)
	}
}

// Every kind of bad file is refused with the line and the seat it is about.
func TestParseNamesEveryProblemByLineAndSeat(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		want []string
	}{
		{"duplicate seat ids", `{"eventId": "e1", "seats": [
  {"seatId": "A1", "priceMinor": 100, "currency": "EUR"},
  {"seatId": "A1", "priceMinor": 100, "currency": "EUR"}
]}`, []string{`s.json:3: seat "A1": seatId: named twice (first on line 2)`}},
		{"bad currency", `{"eventId": "e1", "seats": [
  {"seatId": "A1", "priceMinor": 100, "currency": "EURO"},
  {"seatId": "A2", "priceMinor": 100}
]}`, []string{`s.json:2: seat "A1": currency: "EURO": want a three-letter ISO 4217 code`, `s.json:3: seat "A2": currency: ""`}},
		{"non-positive prices", `{"eventId": "e1", "seats": [
  {"seatId": "A1", "priceMinor": 0, "currency": "EUR"},
  {"seatId": "A2", "priceMinor": -5, "currency": "EUR"},
  {"seatId": "A3", "currency": "EUR"}
]}`, []string{`s.json:2: seat "A1": priceMinor: must be a positive`, `s.json:3: seat "A2": priceMinor:`, `s.json:4: seat "A3": priceMinor:`}},
		{"fractional price", `{"eventId": "e1", "seats": [
  {"seatId": "A1", "priceMinor": 50.5, "currency": "EUR"}
]}`, []string{`s.json:2: seat "A1": priceMinor: want a whole number, got a JSON number`}},
		{"closesAt before opensAt", `{"eventId": "e1",
  "opensAt": "2026-06-01T10:00:00Z",
  "closesAt": "2026-06-01T09:00:00Z",
  "seats": [{"seatId": "A1", "priceMinor": 100, "currency": "EUR"}]}`, []string{`s.json:3: closesAt: 2026-06-01T09:00:00Z is not after opensAt`}},
		{"a time without its offset", `{"eventId": "e1", "opensAt": "2026-06-01 10:00",
  "seats": [{"seatId": "A1", "priceMinor": 100, "currency": "EUR"}]}`, []string{`s.json:1: opensAt: "2026-06-01 10:00": want an RFC 3339 time`}},
		{"unknown seat field", `{"eventId": "e1", "seats": [
  {"seatId": "A1", "priceMinor": 100, "currency": "EUR"},
  {"seatId": "A2", "row": "1", "priceMinor": 100, "currency": "EUR"}
]}`, []string{`s.json:3: seat "A2": unknown field "row": a seat has seatId, priceMinor and currency only`}},
		{"unknown top-level field", `{"eventId": "e1",
  "venue": "Hall",
  "seats": [{"seatId": "A1", "priceMinor": 100, "currency": "EUR"}]}`, []string{`s.json:2: unknown field "venue"`}},
		{"seat ids the API would refuse", `{"eventId": "e 1", "seats": [
  {"seatId": "A#1", "priceMinor": 100, "currency": "EUR"}
]}`, []string{`s.json:1: eventId: "e 1"`, `s.json:2: seat "A#1": seatId: want 1 to 64`}},
		{"a price no reservation may charge", `{"eventId": "e1", "seats": [
  {"seatId": "A1", "priceMinor": 10000000001, "currency": "EUR"}
]}`, []string{`s.json:2: seat "A1": priceMinor: 10000000001 is more than one reservation may charge`}},
		{"prices Stripe would refuse", `{"eventId": "e1", "seats": [
  {"seatId": "A1", "priceMinor": 49, "currency": "EUR"},
  {"seatId": "A2", "priceMinor": 29, "currency": "gbp"},
  {"seatId": "A3", "priceMinor": 49, "currency": "JPY"},
  {"seatId": "A4", "priceMinor": 100000000, "currency": "EUR"}
]}`, []string{
			`s.json:2: seat "A1": priceMinor: 49 is below Stripe's minimum charge in EUR (50 minor units, €0.50)`,
			`s.json:3: seat "A2": priceMinor: 29 is below Stripe's minimum charge in GBP (30 minor units, £0.30)`,
			`s.json:4: seat "A3": priceMinor: 49 is below Stripe's minimum charge in JPY (50 minor units, ¥50)`,
			`s.json:5: seat "A4": priceMinor: 100000000 is more than one reservation may charge (99999999 minor units`,
		}},
		{"no seats", `{"eventId": "e1", "seats": []}`, []string{`s.json:1: seats: at least one seat is required`}},
		{"missing fields", `{}`, []string{`s.json: eventId: is required`, `s.json: seats: is required`}},
		{"not JSON", "{\"eventId\": \"e1\",\n \"seats\": [\n  {\"seatId\": \"A1\" \"priceMinor\": 1}\n]}", []string{`s.json:3: seats: not valid JSON`}},
		{"a truncated file", `{"eventId": "e1", "seats": [`, []string{`ends in the middle of a JSON value`}},
		{"two objects", `{"eventId": "e1", "seats": [{"seatId": "A1", "priceMinor": 1, "currency": "EUR"}]}
{"eventId": "e2"}`, []string{`s.json:2: more JSON after the object`}},
		{"a key named twice", `{"eventId": "e1",
  "eventId": "e2",
  "seats": [{"seatId": "A1", "priceMinor": 1, "currency": "EUR"}]}`, []string{`s.json:2: eventId: named twice (first on line 1)`}},
		{"wrong type at the top", `{"eventId": 7, "seats": {"seatId": "A1"}}`, []string{`s.json:1: eventId: want a string, got a JSON number`, `s.json:1: seats: want an array of seats`}},
		{"empty file", "  \n", []string{`s.json: the file is empty`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.json", []byte(tc.file))
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FileError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "nothing was written") {
				t.Errorf("message does not say nothing was written: %s", msg)
			}
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
		})
	}
}

// Stripe's limits are inclusive, and a currency its table does not list is checked only for
// its shape and the eight-digit maximum.
func TestParseAcceptsStripesLimitsAndUnlistedCurrencies(t *testing.T) {
	f, err := Parse("s.json", []byte(`{"eventId": "e1", "seats": [
  {"seatId": "A1", "priceMinor": 50, "currency": "EUR"},
  {"seatId": "A2", "priceMinor": 99999999, "currency": "EUR"},
  {"seatId": "A3", "priceMinor": 30, "currency": "GBP"},
  {"seatId": "A4", "priceMinor": 1, "currency": "XTS"}
]}`))
	if err != nil || len(f.Seats) != 4 {
		t.Fatalf("seats %+v, err %v", f.Seats, err)
	}
}

func TestFileErrorBoundsWhatItSpellsOut(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"eventId": "e1", "seats": [`)
	for i := 0; i < 120; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n" + `{"seatId": "S` + strings.Repeat("1", 1) + string(rune('a'+i%26)) + `", "priceMinor": 0, "currency": "EUR"}`)
	}
	b.WriteString("]}")
	_, err := Parse("big.json", []byte(b.String()))
	var fe *FileError
	if !errors.As(err, &fe) || len(fe.Problems) < 120 {
		t.Fatalf("err = %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "… and") || strings.Count(msg, "\n") > maxReported+2 {
		t.Errorf("message spells out %d lines", strings.Count(msg, "\n"))
	}
}
