// Package sqs is the local stack's Amazon SQS, as far as the deployment uses it: dead-letter
// queues that Lambda sends what it gave up on to, and that an operator reads. A queue keeps
// each message with the time it was sent on the stack's clock, for its retention period; no
// consumer receives from it, so every message it holds is visible. Every minute of the
// stack's clock the service publishes each queue's ApproximateNumberOfMessagesVisible and
// ApproximateAgeOfOldestMessage into the twin's metric store, as SQS publishes them to
// CloudWatch, so the deployment's DLQ alarms can be evaluated locally.
//
// It is a package of its own rather than part of internal/twin/stack because nothing in it
// needs the stack: it is tested without DynamoDB Local, and anything else of the twin that
// parks messages can use it.
package sqs

import (
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/twin/cloudwatch"
)

// Namespace and metric names SQS publishes, and the dimension naming the queue.
const (
	Namespace        = "AWS/SQS"
	MetricVisible    = "ApproximateNumberOfMessagesVisible"
	MetricOldestAge  = "ApproximateAgeOfOldestMessage"
	DimensionQueue   = "QueueName"
	DefaultRetention = 4 * 24 * time.Hour // SQS's own default MessageRetentionPeriod
	// MetricPeriod is how often SQS publishes a queue's metrics.
	MetricPeriod = time.Minute
)

// Options configure a Service.
type Options struct {
	// Clock stamps messages and schedules the metric publication (required).
	Clock clock.Clock
	// Metrics receives the queues' metrics; nil publishes none.
	Metrics *cloudwatch.Store
	// Region and AccountID make up the queues' ARNs.
	Region, AccountID string
}

// Service holds the queues of one account and publishes their metrics.
type Service struct {
	o Options

	mu      sync.Mutex
	queues  []*Queue
	timer   clock.Timer
	started bool
	stopped bool
}

// New returns a service with no queues; Start begins publishing metrics.
func New(o Options) *Service {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Service{o: o}
}

// CreateQueue creates a queue that keeps messages for retention (DefaultRetention when zero),
// or returns the queue already of that name.
func (s *Service) CreateQueue(name string, retention time.Duration) *Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.queues {
		if q.name == name {
			return q
		}
	}
	if retention <= 0 {
		retention = DefaultRetention
	}
	q := &Queue{name: name, arn: fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.o.Region, s.o.AccountID, name),
		retention: retention, clock: s.o.Clock}
	s.queues = append(s.queues, q)
	return q
}

// Queue returns the queue named name, nil when there is none.
func (s *Service) Queue(name string) *Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.queues {
		if q.name == name {
			return q
		}
	}
	return nil
}

// Queues lists the queues in the order they were created.
func (s *Service) Queues() []*Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queues)
}

// Start publishes every queue's metrics each MetricPeriod of the clock, the first one period
// from now. Starting twice, or after Stop, does nothing.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	s.timer = s.o.Clock.AfterFunc(MetricPeriod, s.tick)
}

// tick publishes and schedules the next publication. On a fake clock it runs in the goroutine
// that advances time; it only touches memory, so it may.
func (s *Service) tick() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.timer = s.o.Clock.AfterFunc(MetricPeriod, s.tick)
	s.mu.Unlock()
	s.PublishMetrics(s.o.Clock.Now())
}

// Stop ends the metric publication.
func (s *Service) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

// PublishMetrics puts each queue's two metrics as they stand at at into the metric store:
// visible messages (Count) and the age of the oldest (Seconds, whole, 0 for an empty queue),
// each with the queue's name as its QueueName dimension.
func (s *Service) PublishMetrics(at time.Time) {
	if s.o.Metrics == nil {
		return
	}
	for _, q := range s.Queues() {
		dims := func() map[string]string { return map[string]string{DimensionQueue: q.name} }
		s.o.Metrics.Put(cloudwatch.Datum{Namespace: Namespace, Name: MetricVisible, Dimensions: dims(),
			Value: float64(q.Depth(at)), Unit: "Count", Time: at})
		s.o.Metrics.Put(cloudwatch.Datum{Namespace: Namespace, Name: MetricOldestAge, Dimensions: dims(),
			Value: float64(q.OldestAge(at) / time.Second), Unit: "Seconds", Time: at})
	}
}

// Message is one message of a queue.
type Message struct {
	MessageID string
	Body      string
	// SentAt is when SendMessage stored it, on the service's clock.
	SentAt time.Time
}

// Queue is one standard queue. It is safe for concurrent use.
type Queue struct {
	name, arn string
	retention time.Duration
	clock     clock.Clock

	mu       sync.Mutex
	messages []Message
}

// Name is the queue's name (its QueueName dimension).
func (q *Queue) Name() string { return q.name }

// ARN is the queue's ARN, as a grant on it names it.
func (q *Queue) ARN() string { return q.arn }

// Retention is how long the queue keeps a message.
func (q *Queue) Retention() time.Duration { return q.retention }

// SendMessage stores body, stamped with the clock's time, and returns the stored message.
func (q *Queue) SendMessage(body string) Message {
	m := Message{MessageID: newID(), Body: body, SentAt: q.clock.Now()}
	q.mu.Lock()
	q.messages = append(q.messages, m)
	q.mu.Unlock()
	return m
}

// DeleteMessage removes the message with id, as an operator does once it is redriven; it
// reports whether there was one.
func (q *Queue) DeleteMessage(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.messages)
	q.messages = slices.DeleteFunc(q.messages, func(m Message) bool { return m.MessageID == id })
	return len(q.messages) < n
}

// MessagesAt returns the messages visible at at, oldest first: sent by then and not yet past
// their retention.
func (q *Queue) MessagesAt(at time.Time) []Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []Message
	for _, m := range q.messages {
		if !m.SentAt.After(at) && at.Sub(m.SentAt) < q.retention {
			out = append(out, m)
		}
	}
	return out
}

// Messages returns the messages visible now.
func (q *Queue) Messages() []Message { return q.MessagesAt(q.clock.Now()) }

// Depth is the number of messages visible at at (ApproximateNumberOfMessagesVisible).
func (q *Queue) Depth(at time.Time) int { return len(q.MessagesAt(at)) }

// OldestAge is the age at at of the oldest message visible then (ApproximateAgeOfOldestMessage),
// zero when there is none.
func (q *Queue) OldestAge(at time.Time) time.Duration {
	ms := q.MessagesAt(at)
	if len(ms) == 0 {
		return 0
	}
	return at.Sub(ms[0].SentAt)
}

// newID is a message id in the form SQS gives them (a UUID).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
