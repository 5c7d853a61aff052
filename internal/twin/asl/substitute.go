package asl

import (
	"regexp"
	"sort"
)

var placeholder = regexp.MustCompile(`\$\{([^}]+)\}`)

// Substitute replaces ${Name} placeholders in a definition with the given
// values, textually, as CloudFormation applies DefinitionSubstitutions.
// Placeholders without a value are left as written and returned in missing,
// so that the caller can reject the definition or not.
func Substitute(definition []byte, values map[string]string) (out []byte, missing []string) {
	seen := map[string]bool{}
	out = placeholder.ReplaceAllFunc(definition, func(m []byte) []byte {
		name := string(m[2 : len(m)-1])
		if v, ok := values[name]; ok {
			return []byte(v)
		}
		if !seen[name] {
			seen[name] = true
			missing = append(missing, name)
		}
		return m
	})
	sort.Strings(missing)
	return out, missing
}
