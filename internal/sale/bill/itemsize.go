package bill

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize is an item's size as DynamoDB meters it
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
// each attribute's name in UTF-8 bytes plus its value's size. It is what decides how many
// request units writing the item costs, so a transactional Put can be priced from its request.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize is one value's size: strings and binaries their bytes, numbers about one byte per
// two significant digits plus one, booleans and nulls one byte, lists and maps three bytes plus
// one per element and the elements, sets their elements.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range v.Value {
			n += 1 + len(name) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is a number's size: leading and trailing zeros and the sign and decimal point do
// not count, one byte per two significant digits does, plus one.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	digits := strings.Trim(strings.Replace(s, ".", "", 1), "0")
	return (len(digits)+1)/2 + 1
}
