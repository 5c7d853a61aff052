package asl

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Outline is the top level of a definition as a picture of it needs it: each state's type and
// where it may go next. It is read without validating the definition (a Parallel or Map state
// is one state), so a drawing can show what the engine would refuse.
type Outline struct {
	StartAt string
	// Names are the top-level states, sorted: a drawing of the same definition comes out the
	// same.
	Names  []string
	States map[string]OutlineState
}

// OutlineState is one top-level state's transitions.
type OutlineState struct {
	Type    string `json:"Type"`
	Next    string `json:"Next"`
	End     bool   `json:"End"`
	Default string `json:"Default"`
	Choices []struct {
		Next string `json:"Next"`
	} `json:"Choices"`
	Catch []struct {
		ErrorEquals []string `json:"ErrorEquals"`
		Next        string   `json:"Next"`
	} `json:"Catch"`
}

// ReadOutline reads definition's outline; it refuses what is not JSON and a StartAt that names
// no state.
func ReadOutline(definition []byte) (*Outline, error) {
	o := &Outline{}
	if err := json.Unmarshal(definition, o); err != nil {
		return nil, fmt.Errorf("read ASL definition: %w", err)
	}
	if _, ok := o.States[o.StartAt]; !ok {
		return nil, fmt.Errorf("ASL definition has no StartAt state %q", o.StartAt)
	}
	for n := range o.States {
		o.Names = append(o.Names, n)
	}
	sort.Strings(o.Names)
	return o, nil
}
