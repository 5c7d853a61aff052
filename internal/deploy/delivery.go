package deploy

import (
	"fmt"
	"time"
)

// Delivery is how the outbox reaches EventBridge and EventBridge reaches the consumer, and how
// long each hop keeps trying before it parks what it could not deliver in its dead-letter
// queue. The CDK stack renders these values into the relay's event source mapping, the
// consumer's EventInvokeConfig and the consumer rule's target (infra/stack/events.go); the
// twin plays the same mapping and the same asynchronous queue with them
// (internal/twin/stack/relay.go and consumers.go), so a DLQ message seen locally is one AWS
// would have sent.
type Delivery struct {
	// RelayBatchSize is the most outbox stream records per relay invocation (BatchSize).
	RelayBatchSize int
	// RelayRetryAttempts bounds the retries of a failing batch before its stream
	// coordinates go to RelayDLQ and the shard moves on (MaximumRetryAttempts). Splitting a
	// batch in two does not count as a retry.
	RelayRetryAttempts int
	// RelayMaxRecordAge sends to RelayDLQ, uninvoked, records older than this
	// (MaximumRecordAgeInSeconds): whole seconds.
	RelayMaxRecordAge time.Duration
	// RelayBisectBatchOnError splits a failed batch in two and retries each half, so one bad
	// record does not hold back or take down the records beside it
	// (BisectBatchOnFunctionError).
	RelayBisectBatchOnError bool
	// RelayReportBatchItemFailures makes the mapping honour the relay's partial batch
	// response: it checkpoints before the first failed record instead of retrying the whole
	// batch (FunctionResponseTypes ReportBatchItemFailures). The relay answers that way.
	RelayReportBatchItemFailures bool

	// ConsumerRetryAttempts is how often Lambda retries an asynchronous consumer invocation
	// that failed with a function error before sending it to ConsumerDLQ
	// (EventInvokeConfig MaximumRetryAttempts, at most 2).
	ConsumerRetryAttempts int
	// ConsumerMaxEventAge is how long Lambda keeps an event in the consumer's asynchronous
	// queue, throttled or retried, before sending it to ConsumerDLQ (MaximumEventAgeInSeconds,
	// at most 6 hours): whole seconds.
	ConsumerMaxEventAge time.Duration
	// ConsumerRuleRetryAttempts and ConsumerRuleMaxEventAge bound EventBridge's retries of
	// handing an event to the consumer's asynchronous queue (the rule target's RetryPolicy);
	// what it cannot hand over goes to ConsumerDLQ as well.
	ConsumerRuleRetryAttempts int
	ConsumerRuleMaxEventAge   time.Duration

	// StarterBatchSize, StarterRetryAttempts and StarterMaxRecordAge are the starter's event
	// source mapping on the Admissions stream, as the relay's are on the outbox's: retries
	// until a queued start is older than StarterMaxRecordAge (a buyer kept waiting that long
	// has gone), then StarterDLQ.
	StarterBatchSize     int
	StarterRetryAttempts int
	StarterMaxRecordAge  time.Duration

	// DLQRetention is how long a dead-letter queue keeps a message: the SQS maximum of 14
	// days gives an operator two weeks to look before anything is lost.
	DLQRetention time.Duration
}

// DefaultDelivery is what every stage deploys unless context overrides it.
func DefaultDelivery() Delivery {
	return Delivery{
		RelayBatchSize:               100,
		RelayRetryAttempts:           5,
		RelayMaxRecordAge:            24 * time.Hour,
		RelayBisectBatchOnError:      true,
		RelayReportBatchItemFailures: true,
		ConsumerRetryAttempts:        2,
		ConsumerMaxEventAge:          6 * time.Hour,
		ConsumerRuleRetryAttempts:    8,
		ConsumerRuleMaxEventAge:      6 * time.Hour,
		DLQRetention:                 14 * 24 * time.Hour,
		StarterBatchSize:             10,
		StarterRetryAttempts:         -1,
		StarterMaxRecordAge:          time.Hour,
	}
}

// Validate refuses values AWS would reject at deployment, with the bounds it documents for
// each parameter.
func (d Delivery) Validate() error {
	switch {
	case d.RelayBatchSize <= 0 || d.RelayBatchSize > 10000:
		return fmt.Errorf("relay batch size %d: want 1..10000", d.RelayBatchSize)
	case d.RelayRetryAttempts < 0 || d.RelayRetryAttempts > 10000:
		return fmt.Errorf("relay retry attempts %d: want 0..10000", d.RelayRetryAttempts)
	case d.ConsumerRetryAttempts < 0 || d.ConsumerRetryAttempts > 2:
		return fmt.Errorf("consumer retry attempts %d: want 0..2", d.ConsumerRetryAttempts)
	case d.ConsumerRuleRetryAttempts < 0 || d.ConsumerRuleRetryAttempts > 185:
		return fmt.Errorf("consumer rule retry attempts %d: want 0..185", d.ConsumerRuleRetryAttempts)
	case d.StarterBatchSize <= 0 || d.StarterBatchSize > 10000:
		return fmt.Errorf("starter batch size %d: want 1..10000", d.StarterBatchSize)
	case d.StarterRetryAttempts < -1 || d.StarterRetryAttempts > 10000:
		return fmt.Errorf("starter retry attempts %d: want -1 (until the record is too old) or 0..10000", d.StarterRetryAttempts)
	}
	for _, c := range []struct {
		what   string
		v      time.Duration
		lo, hi time.Duration
	}{
		{"relay max record age", d.RelayMaxRecordAge, time.Minute, 7 * 24 * time.Hour},
		{"starter max record age", d.StarterMaxRecordAge, time.Minute, 7 * 24 * time.Hour},
		{"consumer max event age", d.ConsumerMaxEventAge, time.Minute, 6 * time.Hour},
		{"consumer rule max event age", d.ConsumerRuleMaxEventAge, time.Minute, 24 * time.Hour},
		{"dead-letter retention", d.DLQRetention, time.Minute, 14 * 24 * time.Hour},
	} {
		if c.v%time.Second != 0 || c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("%s %s: want whole seconds in %s..%s", c.what, c.v, c.lo, c.hi)
		}
	}
	return nil
}
