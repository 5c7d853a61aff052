package awsgate

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// Decision is how often the gate answered one authorization request one way.
type Decision struct {
	// Principal is the caller's ARN, e.g. arn:aws:sts::000000000000:assumed-role/claim/claim.
	Principal   string
	AccessKeyID string
	// Operation is the call's X-Amz-Target, e.g. DynamoDB_20120810.TransactWriteItems.
	Operation string
	Action    string
	Resource  string
	Allowed   bool
	// Count is how many times this decision was taken.
	Count int64
}

type decisionKey struct {
	principal *principal
	operation string
	request   Request
	allowed   bool
}

// decisionLog counts decisions by what was decided. It is read rarely and written on every
// call, so a write of a decision seen before takes no lock.
type decisionLog struct {
	counts sync.Map // decisionKey → *atomic.Int64
}

func (l *decisionLog) record(p *principal, operation string, r Request, allowed bool) {
	key := decisionKey{principal: p, operation: operation, request: r, allowed: allowed}
	if n, ok := l.counts.Load(key); ok {
		n.(*atomic.Int64).Add(1)
		return
	}
	n, _ := l.counts.LoadOrStore(key, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// all lists every decision, ordered by principal, operation, action, resource, denials first.
func (l *decisionLog) all() []Decision {
	var out []Decision
	l.counts.Range(func(k, v any) bool {
		key := k.(decisionKey)
		out = append(out, Decision{
			Principal: key.principal.arn, AccessKeyID: key.principal.accessKeyID,
			Operation: key.operation, Action: key.request.Action, Resource: key.request.Resource,
			Allowed: key.allowed, Count: v.(*atomic.Int64).Load(),
		})
		return true
	})
	slices.SortFunc(out, func(a, b Decision) int {
		return cmp.Or(
			cmp.Compare(a.Principal, b.Principal),
			cmp.Compare(a.AccessKeyID, b.AccessKeyID),
			cmp.Compare(a.Operation, b.Operation),
			cmp.Compare(a.Action, b.Action),
			cmp.Compare(a.Resource, b.Resource),
			boolOrder(a.Allowed, b.Allowed),
		)
	})
	return out
}

func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// Call is how many calls of one operation the callers of one role made through the gate.
type Call struct {
	// Role is the name of the role the callers assumed (AddAssumedRole's roleName); empty for
	// the account's root (AddAdmin).
	Role string
	// Service is the service's SDK id (ServiceDynamoDB, ServiceStepFunctions, ...); Operation
	// the X-Amz-Target's operation, e.g. "TransactWriteItems".
	Service   string
	Operation string
	Count     int64
}

type callKey struct {
	principal *principal
	service   *service
	operation string
}

// callLog counts calls by caller and operation. Like decisionLog it is written on every call
// and read rarely, so counting a call of a kind seen before takes no lock. It keys by
// principal, a pointer, rather than by role so that the hot path hashes no role name; all
// adds up the principals of one role.
type callLog struct {
	counts sync.Map // callKey → *atomic.Int64
}

func (l *callLog) record(p *principal, svc *service, operation string) {
	key := callKey{principal: p, service: svc, operation: operation}
	if n, ok := l.counts.Load(key); ok {
		n.(*atomic.Int64).Add(1)
		return
	}
	n, _ := l.counts.LoadOrStore(key, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// all lists every count, summed per role, service and operation, in that order.
func (l *callLog) all() []Call {
	type byRole struct{ role, service, operation string }
	sums := map[byRole]int64{}
	l.counts.Range(func(k, v any) bool {
		key := k.(callKey)
		sums[byRole{key.principal.role, key.service.name, key.operation}] += v.(*atomic.Int64).Load()
		return true
	})
	out := make([]Call, 0, len(sums))
	for k, n := range sums {
		out = append(out, Call{Role: k.role, Service: k.service, Operation: k.operation, Count: n})
	}
	slices.SortFunc(out, func(a, b Call) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.Service, b.Service), cmp.Compare(a.Operation, b.Operation))
	})
	return out
}
