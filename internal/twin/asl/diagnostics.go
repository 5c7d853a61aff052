package asl

import (
	"fmt"
	"strings"
)

// ExpressProblems lists what an EXPRESS state machine cannot run, located as Parse locates
// problems: callback (.waitForTaskToken) and job-run (.sync) tasks, which Express workflows do
// not support.
func (sm *StateMachine) ExpressProblems() []Problem {
	var out []Problem
	var walk func(b *block, loc string)
	walk = func(b *block, loc string) {
		if b == nil {
			return
		}
		for _, name := range b.order {
			s := b.States[name]
			if s == nil {
				continue
			}
			sloc := loc + "/States/" + name
			for _, pattern := range []string{".waitForTaskToken", ".sync"} {
				if s.Type == "Task" && strings.HasSuffix(s.Resource, pattern) {
					out = append(out, Problem{Code: "SCHEMA_VALIDATION_FAILED", Location: sloc + "/Resource",
						Message: fmt.Sprintf("Express state machine does not support '%s' service integration ", pattern)})
				}
			}
			for i, br := range s.Branches {
				walk(br, fmt.Sprintf("%s/Branches[%d]", sloc, i))
			}
			walk(s.Processor, sloc+"/ItemProcessor")
		}
	}
	walk(sm.root, "")
	return out
}
