package saga

import (
	"context"
	"errors"
	"strings"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

// Authorize runs inside the waitForTaskToken state: it moves the live hold to PAYMENT_PENDING,
// creates (or reuses) the reservation's PaymentIntent with the idempotency key
// {reservationId}:authorize, records its id and this attempt's task token, and — when the
// input carries a payment method — confirms it server-side. The state then waits for the
// webhook's SendTaskSuccess/SendTaskFailure; what this returns is only logged.
//
// Re-running it (redelivery, a crash after a write, or a new state attempt with a new token)
// finds the state already advanced, reuses the PaymentIntent and records the newest token. A
// new attempt that finds the payment already AUTHORIZED returns *PaymentAlreadyAuthorized: the
// webhook answered the earlier attempt's token, and the ASL routes the error to "Confirm
// seats" rather than this step answering its own token (only the api and webhook roles may
// call SendTask*).
func (s *Steps) Authorize(ctx context.Context, ev AuthorizeEvent) (AuthorizeResult, error) {
	in := ev.Input.Input
	id := in.ReservationID
	if ev.TaskToken == "" {
		err := &InvalidRequest{Field: "taskToken", Problem: "is empty"}
		s.fail(ctx, "authorize", in, err)
		return AuthorizeResult{}, err
	}
	var (
		auth payment.Authorization
		// written is the reservation as this step's last write left it: the next round
		// decides on it rather than reading it back, since that write's own input determined
		// it, and every later write is fenced by its version (a change by anyone else fails
		// that write, which is then read and decided anew). Only a round whose act is such a
		// write may rest on it: a round that calls the provider reads first.
		written *reservation.Reservation
	)
	for round := 0; round < maxRounds; round++ {
		var r reservation.Reservation
		var err error
		if written != nil {
			r, written = *written, nil
		} else if r, err = s.get(ctx, id); err != nil {
			s.fail(ctx, "authorize", in, err)
			return AuthorizeResult{}, err
		}
		now := s.now()
		if r.CustomerCanceled && r.Inventory != reservation.Confirmed {
			// The customer's cancel is recorded: no payment starts or goes on; compensation
			// voids what exists and releases the seats.
			err := &CustomerCanceled{ReservationID: id}
			s.fail(ctx, "authorize", in, err)
			return AuthorizeResult{}, err
		}
		switch {
		case r.Inventory == reservation.Held && r.Payment == reservation.NotStarted:
			if !r.HoldLive(now) {
				err := &reservation.HoldExpired{ReservationID: id, ExpiredAt: r.HoldExpiresAt, Now: now, Reason: "before payment started"}
				s.fail(ctx, "authorize", in, err)
				return AuthorizeResult{}, err
			}
			var next reservation.Reservation
			if next, err = s.Store.StartPayment(ctx, id, reservation.GuardOf(r)); err == nil {
				written = &next
			}

		case r.Inventory == reservation.PaymentPending && r.Payment == reservation.NotStarted:
			auth, err = s.createAuthorization(ctx, in, r)
			if err != nil {
				s.fail(ctx, "authorize", in, err)
				return AuthorizeResult{}, err
			}
			// Not remembered: the next round confirms the card, a call to the provider that
			// no write fences, so it must decide on a fresh read that sees a cancel recorded
			// since this write.
			_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{
				ReservationID: id, Guard: reservation.GuardOf(r),
				Event: reservation.StartAuthorization, From: reservation.NotStarted,
				PaymentIntentID: auth.PaymentIntentID, TaskToken: ev.TaskToken,
			})

		case r.Inventory == reservation.PaymentPending && r.Payment == reservation.Authorizing:
			if r.TaskToken != ev.TaskToken {
				// A new attempt of the state: the webhook must answer this attempt's token. The
				// next round confirms the card, so it reads afresh (see above).
				_, err = s.Store.UpdatePayment(ctx, PaymentUpdate{
					ReservationID: id, Guard: reservation.GuardOf(r), TaskToken: ev.TaskToken,
				})
				break
			}
			if auth.PaymentIntentID == "" {
				auth, err = s.createAuthorization(ctx, in, r)
				if err != nil {
					s.fail(ctx, "authorize", in, err)
					return AuthorizeResult{}, err
				}
			}
			if err := s.confirmPaymentMethod(ctx, in, &auth); err != nil {
				var declined *PaymentDeclined
				if !errors.As(err, &declined) || declined.Code != payment.CodeUnknownPaymentMethod {
					s.fail(ctx, "authorize", in, err)
					return AuthorizeResult{}, err
				}
				// The provider refused the method before any attempt, so no payment_failed
				// webhook will record the decline: the step records it, and the compensation
				// then unwinds instead of holding the seats for a payment that cannot come.
				// A write that lost a race is decided anew on a fresh read.
				if _, werr := s.Store.UpdatePayment(ctx, PaymentUpdate{
					ReservationID: id, Guard: reservation.GuardOf(r),
					Event: reservation.PaymentDeclined, From: reservation.Authorizing,
					Reason: "the payment method is unknown to the provider", NotifyCustomer: reservation.PaymentDeclined.NotifiesCustomer(),
				}); werr == nil {
					s.fail(ctx, "authorize", in, err)
					return AuthorizeResult{}, err
				} else if werr = s.storeStep(ctx, "authorize", in, werr); werr != nil {
					return AuthorizeResult{}, werr
				}
				continue
			}
			s.outcome(ctx, "authorize", in, "waiting", nil, "paymentIntentId", auth.PaymentIntentID, "providerStatus", auth.ProviderStatus)
			return AuthorizeResult{ReservationID: id, PaymentIntentID: auth.PaymentIntentID, ProviderStatus: auth.ProviderStatus, Version: r.Version}, nil

		case r.Inventory == reservation.PaymentPending && r.Payment == reservation.Authorized:
			// The authorization already landed. A redelivery of the same attempt needs
			// nothing: the webhook reports (or reported) to this token. A new attempt has a
			// new token that no webhook will answer (the webhook answered the dead one), so
			// it ends the wait with a routed error the ASL sends on to "Confirm seats". Its
			// token is not recorded: it dies with this answer, so nobody may report to it.
			if r.TaskToken != ev.TaskToken {
				err := &PaymentAlreadyAuthorized{ReservationID: id, PaymentIntentID: r.PaymentIntentID, Version: r.Version}
				s.fail(ctx, "authorize", in, err, "paymentIntentId", r.PaymentIntentID)
				return AuthorizeResult{}, err
			}
			s.outcome(ctx, "authorize", in, "already_authorized", nil)
			return AuthorizeResult{ReservationID: id, PaymentIntentID: r.PaymentIntentID, ProviderStatus: "requires_capture", Version: r.Version}, nil

		case r.Payment == reservation.Failed:
			err := &PaymentDeclined{ReservationID: id, Code: "failed", Detail: "the payment already failed"}
			s.fail(ctx, "authorize", in, err)
			return AuthorizeResult{}, err

		case r.Inventory == reservation.Released:
			err := &reservation.HoldExpired{ReservationID: id, ExpiredAt: r.HoldExpiresAt, Now: now,
				Reason: "the seats were released before payment started"}
			s.fail(ctx, "authorize", in, err)
			return AuthorizeResult{}, err

		default:
			err := &ConflictError{ReservationID: id, Detail: string(r.Inventory) + "/" + string(r.Payment) + " cannot start a payment"}
			s.fail(ctx, "authorize", in, err)
			return AuthorizeResult{}, err
		}
		if err = s.storeStep(ctx, "authorize", in, err); err != nil {
			return AuthorizeResult{}, err
		}
	}
	err := &TransactionConflict{Detail: "reservation " + id + " kept changing under the authorize step"}
	s.fail(ctx, "authorize", in, err)
	return AuthorizeResult{}, err
}

func (s *Steps) createAuthorization(ctx context.Context, in Input, r reservation.Reservation) (payment.Authorization, error) {
	auth, err := s.Payments.CreateOrReuseAuthorization(ctx, payment.AuthorizationRequest{
		ReservationID: r.ID,
		Amount:        r.Amount,
		// Stripe spells currencies in lower case; the inventory may store them upper case.
		Currency:        strings.ToLower(r.Currency),
		PaymentIntentID: r.PaymentIntentID,
		CorrelationID:   in.CorrelationID,
	})
	if err != nil {
		return payment.Authorization{}, paymentError(r.ID, err)
	}
	return auth, nil
}

// confirmPaymentMethod confirms the input's payment method once the PaymentIntent still
// needs one; attempt 1 has its own idempotency key, so a redelivery cannot confirm twice.
func (s *Steps) confirmPaymentMethod(ctx context.Context, in Input, auth *payment.Authorization) error {
	if in.PaymentMethod == "" {
		return nil
	}
	switch auth.ProviderStatus {
	case "requires_payment_method", "requires_confirmation":
	default:
		return nil
	}
	if auth.LastDecline != nil {
		return &PaymentDeclined{ReservationID: in.ReservationID, Code: auth.LastDecline.Code, Detail: auth.LastDecline.Error()}
	}
	next, err := s.Payments.ConfirmPaymentMethod(ctx, payment.ConfirmPaymentMethodRequest{
		ReservationID:   in.ReservationID,
		PaymentIntentID: auth.PaymentIntentID,
		PaymentMethod:   in.PaymentMethod,
		Attempt:         1,
	})
	if err != nil {
		return paymentError(in.ReservationID, err)
	}
	*auth = next
	return nil
}
