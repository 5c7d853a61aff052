package stack

import (
	"encoding/json"
	"fmt"
	"github.com/seatsaga/seatsaga/internal/alarms"
	"slices"

	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/twin/sqs"
)

// startQueues creates the deployment's dead-letter queues, under their deploy names (the
// QueueName dimension of their metrics, which the alarms read), keeping messages as long as
// the deployed queues do, and publishes their metrics every minute of the stack's clock.
func (st *Stack) startQueues() {
	st.SQS = sqs.New(sqs.Options{Clock: st.Clock, Metrics: st.CloudWatch, Region: Region, AccountID: AccountID})
	retention := deploy.DefaultDelivery().DLQRetention
	for _, name := range alarms.DeadLetterQueues {
		st.SQS.CreateQueue(name, retention)
	}
	st.SQS.Start()
	st.onClose(func() error { st.SQS.Stop(); return nil })
}

// Queue is the deployment's queue of that deploy name (deploy.RelayDLQ, deploy.ConsumerDLQ),
// nil for any other name: what `inspect` lists with Messages, and tests read.
func (st *Stack) Queue(name string) *sqs.Queue { return st.SQS.Queue(name) }

// sendOnFailure sends record, as JSON, to queue the way Lambda does for function fn: under fn's
// role, which must allow sqs:SendMessage on the queue (its spec's platform grant). A role that
// may not send loses the record, as the destination's delivery fails on AWS.
func (st *Stack) sendOnFailure(fn, queue string, record any) error {
	q := st.SQS.Queue(queue)
	if q == nil {
		return fmt.Errorf("stack: no queue %s", queue)
	}
	if !st.roleAllows(fn, "sqs:SendMessage", q.ARN()) {
		return fmt.Errorf("stack: %s's role may not sqs:SendMessage to %s; the record is lost", fn, q.ARN())
	}
	body, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("stack: the record for %s: %w", queue, err)
	}
	m := q.SendMessage(string(body))
	st.log.Warn("stack: sent to a dead-letter queue", "function", fn, "queue", queue, "messageId", m.MessageID)
	return nil
}

// roleAllows reports whether the deployed spec of fn grants action on the resource arn.
func (st *Stack) roleAllows(fn, action, arn string) bool {
	specs := st.cfg.Functions
	if specs == nil {
		specs = deploy.Functions()
	}
	for _, f := range specs {
		if f.Name != fn {
			continue
		}
		for _, s := range f.Policy(st.deployment) {
			if slices.Contains(s.Actions, action) && (slices.Contains(s.Resources, arn) || slices.Contains(s.Resources, "*")) {
				return true
			}
		}
	}
	return false
}
