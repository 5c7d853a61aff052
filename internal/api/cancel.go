package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/inventory"
	"github.com/seatsaga/seatsaga/internal/metrics"
	"github.com/seatsaga/seatsaga/internal/reservation"
	"github.com/seatsaga/seatsaga/internal/saga"
)

// Money values: what a recorded cancel does to a reservation's money (ReservationStatus.Money),
// or, on already_confirmed, what happens to it instead (Error.Money).
const (
	// MoneyNone: nothing was charged or held.
	MoneyNone = "none"
	// MoneyWillBeVoided: an authorization, or a payment still authorizing; the saga voids it.
	MoneyWillBeVoided = "will_be_voided"
	MoneyVoided       = "voided"
	// MoneyReconciling: the provider's answer is awaited; money found held is voided, money
	// found taken is refunded.
	MoneyReconciling = "reconciling"
	// MoneyWillBeRefunded: money was taken for seats that are given back.
	MoneyWillBeRefunded = "will_be_refunded"
	MoneyRefundPending  = "refund_pending"
	MoneyRefunded       = "refunded"
	// MoneyCaptured and MoneyBeingCaptured answer a cancel of sold seats.
	MoneyCaptured      = "captured"
	MoneyBeingCaptured = "being_captured"
)

// moneyOf says what happens to r's money, from the stored states alone. For seats that are not
// CONFIRMED it assumes a recorded cancel (the settlement unwinds them); for CONFIRMED seats it
// says what happens to the sale's money.
func moneyOf(r reservation.Reservation) string {
	confirmed := r.Inventory == reservation.Confirmed
	switch r.Payment {
	case reservation.NotStarted, reservation.Failed:
		return MoneyNone
	case reservation.Authorizing:
		return MoneyWillBeVoided
	case reservation.Authorized:
		if confirmed {
			return MoneyBeingCaptured
		}
		return MoneyWillBeVoided
	case reservation.Paid:
		if confirmed {
			return MoneyCaptured
		}
		return MoneyWillBeRefunded
	case reservation.Canceled:
		return MoneyVoided
	case reservation.RefundPending:
		return MoneyRefundPending
	case reservation.Refunded:
		return MoneyRefunded
	}
	// CAPTURE_PENDING and UNKNOWN_NEEDS_RECONCILIATION: only the provider knows whether money
	// was taken.
	if confirmed {
		return MoneyBeingCaptured
	}
	return MoneyReconciling
}

// cancelAttempts bounds the cancel's write against concurrent writers (the saga's steps move
// the version while they run); past it the client is asked to retry.
const cancelAttempts = 4

// cancel handles DELETE /reservations/{id}: the cancel is recorded first, then a waiting saga
// is told; the answer says only what is recorded and what that does to the money.
func (h *Handler) cancel(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, *Error) {
	id, r, a, e := h.lookup(ctx, req)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	if a != nil {
		resp, done, e := h.cancelAdmission(ctx, *a)
		if done || e != nil {
			return resp, e
		}
		// The claim wrote the reservation since the lookup: the cancel is recorded on it like
		// any other, never answered from a stale view.
		stored, found, e := h.read(ctx, id)
		if e != nil {
			return events.APIGatewayProxyResponse{}, e
		}
		if !found {
			return events.APIGatewayProxyResponse{}, h.serverError(ctx, "cancel", errors.New("the claim's reservation is missing"), "reservationId", id)
		}
		r = stored
	}
	r, recorded, e := h.recordCancel(ctx, r)
	if e != nil {
		return events.APIGatewayProxyResponse{}, e
	}
	log := h.d.Logger.With("reservationId", id, "correlationId", r.CorrelationID)
	if recorded {
		h.d.Metrics.Count("CustomerCancels", 1)
		log.InfoContext(ctx, "api: customer cancel recorded", "inventory", string(r.Inventory), "payment", string(r.Payment))
	}
	h.signalCancel(ctx, r, log)
	status := http.StatusAccepted
	if settled(r) {
		status = http.StatusOK
	}
	return jsonResponse(status, viewOf(r)), nil
}

// cancelAdmission cancels a buyer the gate let through whose reservation the Claim step has not
// written (a queued start, or a saga that has not reached its claim): the admission turns
// CANCELED, the claim then refuses to hold for it, and the seats are on sale again at once.
// done is false when the claim got there first, and the cancel is the reservation's.
func (h *Handler) cancelAdmission(ctx context.Context, a reservation.Admission) (events.APIGatewayProxyResponse, bool, *Error) {
	got, wrote, err := h.d.Admissions.CancelAdmission(ctx, a)
	if errors.Is(err, inventory.ErrClaimed) {
		return events.APIGatewayProxyResponse{}, false, nil
	}
	if wrote {
		// Counted by the call that wrote it, even when giving the seats back failed after: the
		// retry finds the cancel recorded and writes nothing.
		h.d.Metrics.Count("CustomerCancels", 1)
		h.d.Logger.InfoContext(ctx, "api: customer cancel recorded before the claim", "reservationId", a.ReservationID, "queued", a.StartQueued)
	}
	if err != nil {
		return events.APIGatewayProxyResponse{}, true, h.serverError(ctx, "cancel admission", err, "reservationId", a.ReservationID)
	}
	return jsonResponse(http.StatusOK, admissionView(got)), true, nil
}

// recordCancel writes the cancel unless it is recorded already, reading the reservation again
// whenever another writer moved it. The bool reports that this call wrote it.
func (h *Handler) recordCancel(ctx context.Context, r reservation.Reservation) (reservation.Reservation, bool, *Error) {
	for attempt := 1; ; attempt++ {
		switch {
		case r.Inventory == reservation.Confirmed:
			return r, false, alreadyConfirmed(r)
		case r.CustomerCanceled:
			return r, false, nil
		case attempt > cancelAttempts:
			h.d.Logger.WarnContext(ctx, "api: the reservation kept changing under the cancel", "reservationId", r.ID, "attempts", cancelAttempts)
			return r, false, errBusy
		}
		got, err := h.d.Reservations.Cancel(ctx, r.ID, reservation.GuardOf(r))
		if err == nil {
			// The guard names a version without the cancel, so a write that succeeded is ours.
			return got, got.Version != r.Version, nil
		}
		var (
			stale *reservation.StaleVersion
			guard *reservation.GuardFailed
		)
		if !errors.As(err, &stale) && !errors.As(err, &guard) {
			return r, false, h.serverError(ctx, "record cancel", err, "reservationId", r.ID)
		}
		// Another writer moved it (a saga step, a confirm): decide again on what is stored now.
		next, found, e := h.read(ctx, r.ID)
		if e != nil {
			return r, false, e
		}
		if !found {
			return r, false, h.serverError(ctx, "record cancel", errors.New("the reservation vanished under the cancel"), "reservationId", r.ID)
		}
		r = next
	}
}

// signalCancel tells a saga waiting for the payment that the customer cancelled, best effort.
// The cancel is recorded already and the saga's Confirm and Capture conditions, its
// reconciliation and the sweeper act on the record; so a wait that closed (the webhook, a
// timeout or an earlier cancel got there first) or a Step Functions failure is only logged.
func (h *Handler) signalCancel(ctx context.Context, r reservation.Reservation, log *slog.Logger) {
	if r.Inventory != reservation.PaymentPending || r.TaskToken == "" {
		return
	}
	_, err := h.d.SFN.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{
		TaskToken: aws.String(r.TaskToken),
		Error:     aws.String(saga.ErrCustomerCanceled),
		Cause:     aws.String("the customer canceled reservation " + r.ID),
	})
	outcome := "sent"
	switch {
	case err == nil:
		log.InfoContext(ctx, "api: customer cancel sent to the waiting saga")
	case taskGone(err):
		outcome = "wait_closed"
		log.InfoContext(ctx, "api: the payment wait was closed; the saga acts on the recorded cancel", "error", err.Error())
	default:
		outcome = "failed"
		log.WarnContext(ctx, "api: telling the saga about the cancel failed; it acts on the recorded cancel", "error", err.Error())
	}
	h.d.Metrics.Count("CustomerCancelSignals", 1, metrics.Dim{Name: "outcome", Value: outcome})
}

// settled reports that the saga has nothing left to do for r: the seats are RELEASED and no
// money is or may be held (off the sweeper's set, reservation.Unsettled).
func settled(r reservation.Reservation) bool {
	return r.Inventory == reservation.Released && !r.Unsettled()
}

// alreadyConfirmed refuses a cancel of sold seats and says what happens to the money.
func alreadyConfirmed(r reservation.Reservation) *Error {
	money := moneyOf(r)
	what := "its payment is being captured"
	switch money {
	case MoneyCaptured:
		what = "its payment was captured"
	case MoneyNone, MoneyVoided:
		what = "its payment could not be captured and the seats are being given back"
	case MoneyRefundPending, MoneyRefunded:
		what = "its payment is refunded"
	}
	e := conflict("already_confirmed", "the reservation is confirmed and can no longer be canceled; "+what)
	e.Money = money
	return e
}

// taskGone reports whether Step Functions says the task token no longer waits.
func taskGone(err error) bool {
	var (
		timedOut *sfntypes.TaskTimedOut
		missing  *sfntypes.TaskDoesNotExist
		invalid  *sfntypes.InvalidToken
	)
	return errors.As(err, &timedOut) || errors.As(err, &missing) || errors.As(err, &invalid)
}
