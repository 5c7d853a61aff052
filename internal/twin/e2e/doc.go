// Package e2e runs seatsaga end to end on one machine: the real ASL on the local Step
// Functions engine, the real handlers in the local Lambda host, DynamoDB Local and the payment
// simulator, all started by internal/twin/stack on a fake clock. Each test asserts the final
// reservation, its seats, its outbox events, the execution's path (GetExecutionHistory) and the
// simulator's ledger.
//
// Env (env.go) is the shared harness. TestMain starts one DynamoDB Local for the package; each
// Env gets its own tables (a unique prefix) and its own fake clock, so tests do not see each
// other.
//
// The catalogue below is the suite's specification: one line per scenario test, grouped.
// TestCatalogueListsEveryScenario keeps it and the tests in step.
//
// # Happy path
//
//   - TestHappyPath: CONFIRMED and PAID, one authorization, one capture, at most 6 transitions.
//
// # Races
//
//   - TestSeatTaken: the buyer who loses the claim is rejected in 2 transitions; no reservation, no payment object.
//   - TestAPIIdempotencyKeyMakesOneReservation: the same Idempotency-Key twice, or five times at once, is one reservation and one execution; with another body, 409.
//   - TestStaleDeliveriesChangeNothing: the saga's steps invoked again with an old input and the old task token answered again change nothing.
//   - TestStaleOutboxEventChangesNothing: an outbox event older than one the consumer handled, or redelivered, sends nothing new.
//
// # Payment outcomes
//
//   - TestDecline: a declined card releases the seat and voids the PaymentIntent; the next buyer gets the seat.
//   - TestThreeDSecureNeverCompleted: at the deadline the PaymentIntent is voided and the seat released for the next buyer.
//   - TestLateAuthorizationReacquired: an authorization after the deadline, seat still free, is reacquired and captured.
//   - TestLateAuthorizationSeatTaken: an authorization after the deadline, seat sold to another, is voided and the customer notified.
//   - TestLateAuthorizationPolicyVoid: with the void policy a late authorization is voided though the seat is free.
//   - TestLateAuthorizationOnTheLastReconcileAttempt: an authorization found by the last reconcile attempt is captured and confirmed by the saga.
//   - TestLateAuthorizationAfterTheSagaGaveUp: an authorization after the saga gave up stays in the backlog and the sweeper voids it; the seat is sold once.
//   - TestCaptureFailsDefinitively: a capture refused for good (the authorization lapsed) releases the seats and records the failure in one write.
//   - TestAResumedPaymentWaitEndsAtTheHoldsDeadline: a payment wait resumed by reconciliation ends at the hold's deadline, not a whole hold later.
//
// # Cancels and their interleavings
//
//   - TestCustomerCancelsWhilePaying: a cancel while the buyer is in 3-D Secure voids and releases.
//   - TestAPIStatusShowsThePaymentStepAndCancelIsIdempotent: GET shows the owner what the browser needs to pay; DELETE cancels once, repeats harmlessly, is 409 once confirmed.
//   - TestCancelBeforeTheClaimHoldsNothingAndFreesTheSeatAtOnce: a cancel after the gate, before the claim, is 200 RELEASED; the next buyer gets the seat at once, the claim holds nothing, a retried POST starts nothing.
//   - TestCancelWhileHeldBeforeAuthorizeCreatesNoPayment: a cancel before authorize runs creates no PaymentIntent.
//   - TestCancelAfterTheWebhookClosedTheWaitIsNeverCharged: a cancel after the webhook closed the wait, before Confirm, voids the authorization.
//   - TestCancelDuringReconciliationThenTheBuyerAuthenticatesIsNeverCharged: a cancel during reconciliation, then 3-D Secure completed, is voided.
//   - TestCancelWithADeadTokenStopsTheNextAuthorizeAttempt: a cancel whose signal reaches a dead token stops the next authorize attempt.
//   - TestCancelOfALapsedHoldIsNotReacquiredByALateAuthorization: a cancelled lapsed hold is not sold back by a late authorization.
//   - TestCancelOfAConfirmedReservationIsRefusedAndWritesNothing: a cancel of a confirmed reservation is 409 with nothing written.
//   - TestCancelRepeatedConcurrentlyWithPostRetriesIsRecordedOnce: DELETEs racing each other and POST retries record one cancel, one execution, one void.
//   - TestCancelWhileProcessingThenALateAuthorizationAfterResaleIsVoided: a cancel while processing frees the seat for resale; the late authorization is voided.
//   - TestCancelWithVoidResponsesLostIsNeverCharged: a cancel whose voids' answers are lost is retried with the same key and never charged.
//   - TestCancelWhileVoidsFailAndTheBuyerAuthenticatesIsSweptVoided: a cancel while every void fails and the buyer authenticates ends in the backlog; the sweeper voids it.
//   - TestCancelThenDelayedDuplicatedWebhooksChangeNothing: webhooks duplicated, reordered and delayed past a settled cancel change nothing.
//   - TestCancelWithAStuckCompensationRacingTheSweeperVoidsOnce: the sweeper settles a cancel whose compensation is stuck; the compensation then finds it done.
//
// # Provider and Lambda faults
//
//   - TestCaptureResponseLost: a capture whose answers are lost is retried with the same key: one capture.
//   - TestProviderDownDuringReconcile: the provider down at the deadline leaves the payment unknown and the seat protected until the sweeper resolves it.
//   - TestDeclineWithUnansweredVoid: a decline whose void gets no clear answer keeps the seat until the provider's truth says canceled.
//   - TestStepCrashesAfterWriting: claim, confirm and capture crashing after their write are retried with no double effect.
//   - TestCompensationCrashesAfterWriting: compensate and reconcile crashing after their write record each compensation once.
//   - TestAuthorizeCrashThenTheBuyerAuthorizes: an authorize crash goes to reconciliation, which confirms the authorization the webhook recorded.
//   - TestAFailedReleaseAfterACaptureFailureIsSweptUntilSettled: a release write that keeps failing after a capture failure stays in the backlog until the sweeper settles it.
//
// # Sweeper
//
//   - TestSweeperVoidsAndReleasesAHoldWhoseExecutionStopped: a hold whose execution was stopped is left alone within the grace period, then voided and released.
//   - TestSweeperReleasesAHoldWithoutAnExecution: a hold with no execution and no payment is released once.
//   - TestSweeperRacingTheSagaSettlesALateSuccessOnce: the sweeper and the saga's reconcile settling the same late success sell and capture it once.
//   - TestSweeperCapturesOnceAfterTheExecutionDiedBeforeCapture: confirmed seats whose execution died before Capture are captured once after the grace period.
//   - TestSweeperCountsAnAuthorizationNearItsCaptureDeadline: an authorization near its capture deadline is counted while the provider is down, captured once it is back.
//   - TestSweeperCapturesOnceForAStuckExecution: a capture step stuck in retries is left to the saga until stuck, then captured once; the saga's retry finds it done.
//
// # Refunds
//
//   - TestARefundStaysPendingUntilTheProviderSettlesIt: a pending refund stays in the backlog until the provider says it succeeded.
//   - TestAFailedRefundIsRetriedThenEscalated: a failing refund is retried under new keys, then escalated, never recorded refunded.
//   - TestRefundIDWriteFailsThenThePendingRefundIsStillVerified: a refund whose id write failed is found again and recorded only once it succeeded.
//   - TestRefundResponseLostThenThePendingRefundIsStillVerified: a refund whose answers were lost is found again and recorded only once it succeeded.
//
// # Webhooks
//
//   - TestWebhookDeliveredFiveTimesOutOfOrderConfirmsOnce: five deliveries out of order make one transition and one SendTaskSuccess; a forged one is refused.
//   - TestARolledWebhookSecretIsPickedUpWithoutARestart: a signing secret rolled in Secrets Manager is re-read on the first event signed with it.
//
// # Lost Step Functions answers
//
//   - TestAStartAndATaskAnswerWhoseResponsesWereLostSellTheSeatOnce: a start and a task answer that took effect but lost their answers are retried; the POST gets 202, one execution sells and charges once.
//   - TestACancelWhoseTaskFailureAnswerWasLostIsAcknowledgedAndNotCharged: a cancel whose SendTaskFailure lost its answer is acknowledged and voided, not charged.
//
// # The API's bad input
//
//   - TestAPIRefusesBadInputAndWritesNothing: every bad request gets its 4xx and code, with nothing written and no execution started.
//   - TestTheEdgeRefusesBadInputInTheAPIShapeAndWritesNothing: a body not declared JSON, repeated or miscased keys, a non-ASCII currency, an oversized body and a malformed request line get the API's JSON error with nothing written.
//   - TestAnUnknownPaymentMethodIsDeclinedAndTheSeatGoesBackAtOnce: a payment method the provider does not know is accepted, declined at once with the seat given back, and never charged.
//   - TestAnUnknownPaymentMethodWhoseDeclineRecordFailedIsDeclinedByTheNextAttempt: when the step's record of that decline fails, the next attempt records it; the seat comes back and nothing is authorized.
//
// # The cap on a customer's holds
//
//   - TestAReservationThatEndsGivesItsPlaceUnderTheCapBackAtOnce: a sold and a declined reservation give their places back as they end; a third reservation in progress is refused hold_limit.
//   - TestAnUnknownPaymentMethodsDeclineGivesItsPlaceUnderTheCapBack: a reservation declined for an unknown payment method gives its place back; two new reservations pass, a third is refused hold_limit.
//   - TestARetryOfAnEndedReservationIsAnsweredWithoutTakingAPlace: a retry of a declined reservation's POST after its admission is gone is answered from the reservation and takes no place under the cap.
package e2e
