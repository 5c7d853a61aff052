package catalog

import "fmt"

// stripeMinimum is Stripe's minimum charge in one presentment currency.
type stripeMinimum struct {
	minor int64
	// shown is the minimum as Stripe's page states it.
	shown string
}

// stripeMinimums are the minimum charge amounts Stripe lists for the currencies on its page
// (https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts), in minor units as
// the API counts them (JPY has none: 50 is ¥50). Stripe refuses to create a PaymentIntent for
// less, so a seat priced below them loads but can never be sold alone. Other currencies are
// not checked here. Stripe applies the minimum of the account's settlement currency as well,
// converted at the day's rate, which no file check can know.
var stripeMinimums = map[string]stripeMinimum{
	"USD": {50, "$0.50"}, "AED": {200, "2.00 AED"}, "AUD": {50, "A$0.50"}, "BGN": {100, "1.00 BGN"},
	"BRL": {50, "R$0.50"}, "CAD": {50, "C$0.50"}, "CHF": {50, "0.50 CHF"}, "CZK": {1500, "15.00 CZK"},
	"DKK": {250, "2.50 DKK"}, "EUR": {50, "€0.50"}, "GBP": {30, "£0.30"}, "HKD": {400, "HK$4.00"},
	"HUF": {17500, "175.00 HUF"}, "INR": {50, "₹0.50"}, "JPY": {50, "¥50"}, "MXN": {1000, "MX$10.00"},
	"MYR": {200, "RM 2.00"}, "NOK": {300, "3.00 NOK"}, "NZD": {50, "NZ$0.50"}, "PLN": {200, "2.00 PLN"},
	"RON": {200, "2.00 RON"}, "SEK": {300, "3.00 SEK"}, "SGD": {50, "S$0.50"}, "THB": {1000, "฿10.00"},
}

// stripeRefusal says why Stripe would refuse to charge priceMinor of currency (upper case),
// or "" when the checks here find nothing.
func stripeRefusal(priceMinor int64, currency string) string {
	if m, ok := stripeMinimums[currency]; ok && priceMinor < m.minor {
		return fmt.Sprintf("%d is below Stripe's minimum charge in %s (%d minor units, %s): the seat could not be sold on its own", priceMinor, currency, m.minor, m.shown)
	}
	return ""
}
