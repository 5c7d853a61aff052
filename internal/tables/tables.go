// Package tables holds the one definition of seatsaga's DynamoDB tables: keys, secondary
// indexes, streams and TTL. The local stack creates tables from these values and the CDK app
// declares them from the same values, so the two cannot drift.
package tables

// AttrType is a DynamoDB key attribute type.
type AttrType string

const (
	String AttrType = "S"
	Number AttrType = "N"
)

// Attr names a key attribute and its type.
type Attr struct {
	Name string
	Type AttrType
}

// Projection says which attributes a secondary index copies.
type Projection string

const (
	ProjectAll      Projection = "ALL"
	ProjectKeysOnly Projection = "KEYS_ONLY"
)

// Index is a global secondary index.
type Index struct {
	Name         string
	PartitionKey Attr
	SortKey      *Attr
	Projection   Projection
}

// Table is one table's shape. Name is the logical name; deployments add a prefix.
type Table struct {
	Name         string
	PartitionKey Attr
	SortKey      *Attr
	Indexes      []Index
	// StreamNewImage turns on a stream of new images (the outbox relay reads it).
	StreamNewImage bool
	// TTLAttribute, when set, is the epoch-seconds attribute DynamoDB TTL deletes by. TTL is
	// garbage collection only; no deadline in seatsaga depends on it.
	TTLAttribute string
}

// Logical table names.
const (
	SeatsTable           = "Seats"
	ReservationsTable    = "Reservations"
	OutboxTable          = "Outbox"
	ProcessedEventsTable = "ProcessedEvents"
	AdmissionsTable      = "Admissions"
)

// Index names.
const (
	// SeatsByEvent lists an event's seats for the seat map and the admission pre-check.
	SeatsByEvent = "byEvent"
	// ActiveHoldsByExpiry holds only reservations with a live hold (sparse): shard + expiry.
	ActiveHoldsByExpiry = "activeHoldsByExpiry"
	// ReconcileByAge holds only reservations whose payment is unresolved outside a live hold
	// (sparse): unknown, or authorized/capture pending with the seats confirmed or given back,
	// until the payment is settled. Shard + the time it joined (internal/inventory decides).
	ReconcileByAge = "reconcileByAge"
)

// Attribute names used in keys and indexes.
const (
	AttrSeatKey       = "seatKey"
	AttrEventID       = "eventId"
	AttrSeatID        = "seatId"
	AttrReservationID = "reservationId"
	AttrHoldShard     = "holdShard"
	AttrHoldExpiresAt = "holdExpiresAt"
	AttrReconShard    = "reconShard"
	AttrReconSince    = "reconSince"
	AttrOutboxEventID = "eventId"
	AttrDedupeKey     = "dedupeKey"
	AttrExpiresAtTTL  = "expiresAtEpoch"
)

// Seat item attributes besides the key and index attributes above. Times are fixed-width UTC
// strings (internal/inventory's TimeLayout) so that they compare as strings.
const (
	AttrSeatState     = "state"
	AttrVersion       = "version" // seats and reservations
	AttrUpdatedAt     = "updatedAt"
	AttrPriceMinor    = "priceMinor"
	AttrCurrency      = "currency" // seats and reservations, ISO 4217 upper case
	AttrOnSaleFrom    = "onSaleFrom"
	AttrOnSaleUntil   = "onSaleUntil"
	AttrCreatedAt     = "createdAt"
	AttrCorrelationID = "correlationId"
	// AttrSlotKey is the key of the customer's hold slot a reservation took at the gate.
	AttrSlotKey = "slotKey"
)

// Reservation item attributes besides the key and index attributes above.
const (
	AttrCustomerID       = "customerId"
	AttrSeatIDs          = "seatIds"
	AttrAmount           = "amount"
	AttrInventoryState   = "inventoryState"
	AttrPaymentState     = "paymentState"
	AttrIdempotencyKey   = "idempotencyKey"
	AttrRequestHash      = "requestHash"
	AttrPaymentIntentID  = "paymentIntentId"
	AttrTaskToken        = "taskToken"
	AttrExecutionARN     = "executionArn"
	AttrOutcome          = "outcome"
	AttrCaptureBefore    = "captureBefore"
	AttrCancelAttempts   = "cancelAttempts"
	AttrCustomerCanceled = "customerCanceled"
	AttrRefundID         = "refundId"
	AttrRefundAttempts   = "refundAttempts"
	AttrUnwinding        = "unwinding"
	// AttrRevision counts every write of a reservation item, including detail updates that
	// keep the version; whole-item puts are conditioned on it so none overwrites another.
	AttrRevision = "revision"
	// AttrAdmittedBy and AttrAdmittedUntil are a seat's admission lease: the reservation the
	// API's gate let through for it, and until when no other buyer may pass (internal/inventory).
	AttrAdmittedBy    = "admittedBy"
	AttrAdmittedUntil = "admittedUntil"
	// AttrAdmissionState is ADMITTED, REJECTED once the saga turned the buyer away, or CANCELED
	// once the customer canceled before the claim.
	AttrAdmissionState = "admissionState"
	AttrAdmittedAt     = "admittedAt"
	// AttrStartQueued and AttrStartInput mark an admission whose execution Step Functions
	// would not start at once, with the execution's input: the starter starts it from the
	// Admissions stream.
	AttrStartQueued = "startQueued"
	AttrStartInput  = "startInput"
	// AttrStartQueuedAt is when the start was queued (inventory's time layout), from which
	// the local stack measures how long a queued winner waits.
	AttrStartQueuedAt = "startQueuedAt"
)

// WriteShards is how many shards the sparse indexes spread their partition key over, so that a
// flash sale's burst of holds does not land on one index partition. Readers query every shard.
const WriteShards = 8

// Seats is the authoritative inventory, keyed per seat ({eventId}#{seatId}) so that one event's
// seats do not share a hot partition.
func Seats() Table {
	return Table{
		Name:         SeatsTable,
		PartitionKey: Attr{AttrSeatKey, String},
		Indexes: []Index{{
			Name:         SeatsByEvent,
			PartitionKey: Attr{AttrEventID, String},
			SortKey:      &Attr{AttrSeatID, String},
			Projection:   ProjectAll,
		}},
	}
}

// Reservations holds both state fields of each reservation.
func Reservations() Table {
	return Table{
		Name:         ReservationsTable,
		PartitionKey: Attr{AttrReservationID, String},
		Indexes: []Index{
			{
				Name:         ActiveHoldsByExpiry,
				PartitionKey: Attr{AttrHoldShard, String},
				SortKey:      &Attr{AttrHoldExpiresAt, String},
				Projection:   ProjectAll,
			},
			{
				Name:         ReconcileByAge,
				PartitionKey: Attr{AttrReconShard, String},
				SortKey:      &Attr{AttrReconSince, String},
				Projection:   ProjectAll,
			},
		},
		TTLAttribute: AttrExpiresAtTTL,
	}
}

// Outbox carries the event envelopes written in the same transaction as each change.
func Outbox() Table {
	return Table{
		Name:           OutboxTable,
		PartitionKey:   Attr{AttrOutboxEventID, String},
		StreamNewImage: true,
		TTLAttribute:   AttrExpiresAtTTL,
	}
}

// ProcessedEvents dedupes webhooks and consumers by consumer#eventId.
func ProcessedEvents() Table {
	return Table{
		Name:         ProcessedEventsTable,
		PartitionKey: Attr{AttrDedupeKey, String},
		TTLAttribute: AttrExpiresAtTTL,
	}
}

// Admissions records each buyer the API let through its admission gate, keyed by reservation
// id: what they asked for and whether the saga turned them away. It answers replays and status
// reads before the Claim step has written the reservation, without asking Step Functions.
func Admissions() Table {
	return Table{
		Name:         AdmissionsTable,
		PartitionKey: Attr{AttrReservationID, String},
		// The stream carries queued starts to the starter.
		StreamNewImage: true,
		TTLAttribute:   AttrExpiresAtTTL,
	}
}

// All returns every table seatsaga needs.
func All() []Table {
	return []Table{Seats(), Reservations(), Outbox(), ProcessedEvents(), Admissions()}
}

// Names maps logical table names to deployed names; the zero value uses logical names.
type Names struct {
	Prefix string
}

// Of returns the deployed name of a logical table.
func (n Names) Of(logical string) string { return n.Prefix + logical }
