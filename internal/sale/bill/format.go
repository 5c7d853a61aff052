package bill

import (
	"fmt"
	"math"
)

// FormatUSD shows an amount with enough decimals for a fraction of a cent to read: a small
// sale's lines cost millionths of a dollar.
func FormatUSD(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.6f", v)
}

// FormatQuantity shows a line's quantity: whole units as integers, gigabytes with the decimals
// a small sale needs, anything else to the thousandth.
func FormatQuantity(q float64, unit string) string {
	switch {
	case unit == "GB":
		return fmt.Sprintf("%.6f", q)
	case q == math.Trunc(q):
		return fmt.Sprintf("%.0f", q)
	}
	return fmt.Sprintf("%.3f", q)
}
