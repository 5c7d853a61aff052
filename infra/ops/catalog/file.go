// Package catalog loads an event's seats into the deployed Seats table from a JSON file, the
// way an operator puts a sale on: the whole file is checked first and nothing is written when
// any of it is wrong; then every seat the table lacks is created AVAILABLE with its price, and
// every seat it already has is left exactly as it is (held, sold, priced), so loading a file
// twice changes nothing.
//
// The file holds only what the product reads. seatsaga has no Events table: an event exists
// when it has seats, a seat is priced by priceMinor and currency (internal/inventory), and the
// api refuses a seat outside its on-sale window (onSaleFrom/onSaleUntil on the seat item,
// internal/api's DynamoCatalog). Rows and sections are read by nothing, so the file has no
// field for them: put them in the seat id ("A-12-7"). A price Stripe would refuse to charge
// (stripe.go) is refused too: such a seat would load and never sell.
//
//	{
//	  "eventId":  "concert-2026-06-01",
//	  "opensAt":  "2026-05-01T10:00:00Z",      optional; RFC 3339; the sale opens (inclusive)
//	  "closesAt": "2026-06-01T18:00:00+02:00", optional; RFC 3339; the sale closes (exclusive)
//	  "seats": [
//	    {"seatId": "A-12-7", "priceMinor": 5000, "currency": "EUR"}
//	  ]
//	}
package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seatsaga/seatsaga/internal/api"
	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// File is a checked seats file.
type File struct {
	EventID string
	// OpensAt and ClosesAt bound the sale; zero means unbounded on that side.
	OpensAt, ClosesAt time.Time
	Seats             []Seat
}

// Seat is one seat of the file, its currency upper case.
type Seat struct {
	inventory.NewSeat
	// Line is where the seat starts in the file.
	Line int
}

// NewSeats returns the seats as internal/inventory takes them.
func (f File) NewSeats() []inventory.NewSeat {
	out := make([]inventory.NewSeat, len(f.Seats))
	for i, s := range f.Seats {
		out[i] = s.NewSeat
	}
	return out
}

// Problem is one thing wrong with a file.
type Problem struct {
	// Line is 0 when the problem concerns the file as a whole.
	Line int
	// Seat is the seat's id, or "#n" (1-based) for a seat without a usable id; "" when the
	// problem is not about one seat.
	Seat   string
	Field  string
	Reason string
}

// FileError lists every problem found in a file.
type FileError struct {
	Name     string
	Problems []Problem
}

// maxReported bounds the problems Error spells out; a generated file gone wrong can have
// thousands of the same one.
const maxReported = 50

func (e *FileError) Error() string {
	var b strings.Builder
	noun := "problems"
	if len(e.Problems) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(&b, "%s: %d %s, nothing was written:", e.Name, len(e.Problems), noun)
	for i, p := range e.Problems {
		if i == maxReported {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Problems)-maxReported)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(e.Name)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
		if p.Seat != "" {
			fmt.Fprintf(&b, "seat %s: ", p.Seat)
		}
		if p.Field != "" {
			b.WriteString(p.Field + ": ")
		}
		b.WriteString(p.Reason)
	}
	return b.String()
}

// seatJSON is a seat as the file spells it; any other field is refused.
type seatJSON struct {
	SeatID     string `json:"seatId"`
	PriceMinor int64  `json:"priceMinor"`
	Currency   string `json:"currency"`
}

// unknownSeatFieldHint follows the first unknown field of a seat.
const unknownSeatFieldHint = "a seat has seatId, priceMinor and currency only; nothing in seatsaga reads a row or a section, so put them in the seat id (e.g. \"A-12-7\")"

// Parse checks a seats file named name and returns it, or a *FileError naming every problem
// by line and seat. It reads nothing but data.
func Parse(name string, data []byte) (File, error) {
	p := &parser{data: data, fe: &FileError{Name: name}}
	f := p.file()
	if len(p.fe.Problems) > 0 {
		return File{}, p.fe
	}
	// internal/inventory is the authority on what a seat needs; the checks above only name
	// the line. Anything it refuses beyond them is reported too.
	if _, err := inventory.ValidateSeats(f.EventID, f.NewSeats()); err != nil {
		var ve *reservation.ValidationError
		if !errors.As(err, &ve) {
			return File{}, fmt.Errorf("%s: %w", name, err)
		}
		for _, prob := range ve.Problems {
			p.add(0, "", prob.Field, prob.Reason)
		}
		return File{}, p.fe
	}
	return f, nil
}

type parser struct {
	data []byte
	fe   *FileError
	// hinted is set once the unknown-field hint has been given.
	hinted bool
}

func (p *parser) add(line int, seat, field, reason string) {
	p.fe.Problems = append(p.fe.Problems, Problem{Line: line, Seat: seat, Field: field, Reason: reason})
}

// valueStart skips the whitespace and separators before the value at off.
func (p *parser) valueStart(off int64) int64 {
	for off < int64(len(p.data)) && strings.IndexByte(" \t\r\n,:", p.data[off]) >= 0 {
		off++
	}
	return off
}

// line is the 1-based line of byte off.
func (p *parser) line(off int64) int {
	return bytes.Count(p.data[:min(off, int64(len(p.data)))], []byte("\n")) + 1
}

// next reads the next value of dec, whose input starts at byte base of the file, and returns
// it with its start offset in the file. A syntax error ends the parse: nothing after it can
// be trusted.
func (p *parser) next(dec *json.Decoder, base int64, seat, field string) (json.RawMessage, int64, bool) {
	start := p.valueStart(base + dec.InputOffset())
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		p.add(p.syntaxLine(err, base, start), seat, field, syntaxReason(err))
		return nil, start, false
	}
	return raw, start, true
}

func (p *parser) syntaxLine(err error, base, fallback int64) int {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return p.line(base + syntax.Offset - 1)
	}
	return p.line(fallback)
}

func syntaxReason(err error) string {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return "not valid JSON: " + syntax.Error()
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the file ends in the middle of a JSON value"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// typeProblem adds a decoding problem of a value that starts at byte start.
func (p *parser) typeProblem(err error, start int64, seat, field string) {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		want := typ.Type.Kind().String()
		switch want {
		case "int64":
			want = "whole number"
		}
		name := field
		if typ.Field != "" {
			name = typ.Field
		}
		p.add(p.line(start+typ.Offset-1), seat, name, fmt.Sprintf("want a %s, got a JSON %s", want, typ.Value))
		return
	}
	reason := strings.TrimPrefix(err.Error(), "json: ")
	if strings.HasPrefix(reason, "unknown field") && seat != "" && !p.hinted {
		reason += ": " + unknownSeatFieldHint
		p.hinted = true
	}
	p.add(p.line(start), seat, field, reason)
}

func (p *parser) file() File {
	var f File
	if len(bytes.TrimSpace(p.data)) == 0 {
		p.add(0, "", "", "the file is empty; want a JSON object with eventId and seats")
		return f
	}
	dec := json.NewDecoder(bytes.NewReader(p.data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		p.add(p.line(p.valueStart(0)), "", "", "want a JSON object with eventId and seats")
		return f
	}
	seen := map[string]int{}
	// undecodable keys have had their problem reported; their value is not checked again.
	undecodable := map[string]bool{}
	var opensAt, closesAt string
	for dec.More() {
		keyStart := p.valueStart(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			p.add(p.syntaxLine(err, 0, keyStart), "", "", syntaxReason(err))
			return f
		}
		key, _ := tok.(string)
		line := p.line(keyStart)
		if first, dup := seen[key]; dup {
			p.add(line, "", key, fmt.Sprintf("named twice (first on line %d)", first))
		}
		seen[key] = line
		raw, start, ok := p.next(dec, 0, "", key)
		if !ok {
			return f
		}
		var dst any
		switch key {
		case "eventId":
			dst = &f.EventID
		case "opensAt":
			dst = &opensAt
		case "closesAt":
			dst = &closesAt
		case "seats":
			f.Seats = p.seats(raw, start)
			continue
		default:
			p.add(line, "", "", fmt.Sprintf("unknown field %q: a seats file has eventId, opensAt, closesAt and seats", key))
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			p.typeProblem(err, start, "", key)
			undecodable[key] = true
		}
	}
	if _, err := dec.Token(); err != nil {
		p.add(p.syntaxLine(err, 0, int64(len(p.data))), "", "", syntaxReason(err))
		return f
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		p.add(p.line(p.valueStart(dec.InputOffset())), "", "", "more JSON after the object; a file holds one event")
	}

	if _, ok := seen["eventId"]; !ok {
		p.add(0, "", "eventId", "is required")
	} else if !undecodable["eventId"] && api.ValidateEventID(f.EventID) != nil {
		p.add(seen["eventId"], "", "eventId", fmt.Sprintf("%q: want 1 to %d letters, digits, '-', '_' or '.' (what the API accepts in a path)", f.EventID, api.MaxIDLen))
	}
	if _, ok := seen["seats"]; !ok {
		p.add(0, "", "seats", "is required")
	} else if len(f.Seats) == 0 && len(p.fe.Problems) == 0 {
		p.add(seen["seats"], "", "seats", "at least one seat is required")
	}
	f.OpensAt = p.instant(opensAt, seen["opensAt"], "opensAt")
	f.ClosesAt = p.instant(closesAt, seen["closesAt"], "closesAt")
	if !f.OpensAt.IsZero() && !f.ClosesAt.IsZero() && !f.ClosesAt.After(f.OpensAt) {
		p.add(seen["closesAt"], "", "closesAt", fmt.Sprintf("%s is not after opensAt %s: the sale would never be open",
			f.ClosesAt.Format(time.RFC3339), f.OpensAt.Format(time.RFC3339)))
	}
	return f
}

// instant parses an RFC 3339 time with its offset; "" is unbounded.
func (p *parser) instant(v string, line int, field string) time.Time {
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		p.add(line, "", field, fmt.Sprintf("%q: want an RFC 3339 time with its offset, e.g. 2026-05-01T10:00:00Z", v))
		return time.Time{}
	}
	return t
}

// seats checks the seats array raw, which starts at byte base of the file.
func (p *parser) seats(raw json.RawMessage, base int64) []Seat {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		p.add(p.line(base), "", "seats", "want an array of seats")
		return nil
	}
	var out []Seat
	firstLine := map[string]int{}
	for i := 1; dec.More(); i++ {
		label := fmt.Sprintf("#%d", i)
		rawSeat, start, ok := p.next(dec, base, label, "")
		if !ok {
			return out
		}
		line := p.line(start)
		var sj seatJSON
		strict := json.NewDecoder(bytes.NewReader(rawSeat))
		strict.DisallowUnknownFields()
		if err := strict.Decode(&sj); err != nil {
			p.typeProblem(err, start, seatLabel(rawSeat, label), "")
			continue
		}
		if sj.SeatID != "" {
			label = fmt.Sprintf("%q", sj.SeatID)
		}
		switch {
		case sj.SeatID == "":
			p.add(line, label, "seatId", "is required")
		case api.ValidateEventID(sj.SeatID) != nil:
			// The api checks seat ids by the same rule as event ids.
			p.add(line, label, "seatId", fmt.Sprintf("want 1 to %d letters, digits, '-', '_' or '.' (what the API accepts in a request)", api.MaxIDLen))
		case firstLine[sj.SeatID] > 0:
			p.add(line, label, "seatId", fmt.Sprintf("named twice (first on line %d)", firstLine[sj.SeatID]))
		default:
			firstLine[sj.SeatID] = line
		}
		currency, currencyOK := reservation.NormalizeCurrency(sj.Currency)
		switch {
		case sj.PriceMinor <= 0:
			p.add(line, label, "priceMinor", fmt.Sprintf("must be a positive whole number of minor units (5000 is 50.00), got %d", sj.PriceMinor))
		case sj.PriceMinor > api.MaxAmount:
			p.add(line, label, "priceMinor", fmt.Sprintf("%d is more than one reservation may charge (%d minor units, Stripe's limit for one payment)", sj.PriceMinor, api.MaxAmount))
		default:
			// Stripe's own limits: a seat it would refuse to charge loads fine and then never sells.
			if why := stripeRefusal(sj.PriceMinor, currency); why != "" {
				p.add(line, label, "priceMinor", why)
			}
		}
		if !currencyOK {
			p.add(line, label, "currency", fmt.Sprintf("%q: want a three-letter ISO 4217 code, e.g. EUR", sj.Currency))
		}
		out = append(out, Seat{NewSeat: inventory.NewSeat{SeatID: sj.SeatID, PriceMinor: sj.PriceMinor, Currency: currency}, Line: line})
	}
	return out
}

// seatLabel names a seat that failed to decode by its id when it has one.
func seatLabel(raw json.RawMessage, fallback string) string {
	var named struct {
		SeatID string `json:"seatId"`
	}
	if json.Unmarshal(raw, &named) == nil && named.SeatID != "" {
		return fmt.Sprintf("%q", named.SeatID)
	}
	return fallback
}
