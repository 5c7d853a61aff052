package api

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/payment"
	"github.com/seatsaga/seatsaga/internal/reservation"
)

const testMachine = "arn:aws:states:us-east-1:000000000000:stateMachine:reservation"

// fakeSFN keeps executions by ARN and records every call.
type fakeSFN struct {
	mu         sync.Mutex
	executions map[string]*fakeExecution
	starts     int
	failures   []sfn.SendTaskFailureInput
	// failErr, when set, is what SendTaskFailure answers.
	failErr error
	// startErr, when set, is what StartExecution answers (after recording nothing).
	startErr error
	// raceInput, when set, makes StartExecution behave as if a concurrent request had started
	// the execution with this input first.
	raceInput string
}

type fakeExecution struct {
	input  string
	status sfntypes.ExecutionStatus
}

func newFakeSFN() *fakeSFN { return &fakeSFN{executions: map[string]*fakeExecution{}} }

func (f *fakeSFN) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		return nil, f.startErr
	}
	arn := executionARN(aws.ToString(in.StateMachineArn), aws.ToString(in.Name))
	if f.raceInput != "" {
		f.executions[arn] = &fakeExecution{input: f.raceInput, status: sfntypes.ExecutionStatusRunning}
		f.raceInput = ""
	}
	if _, ok := f.executions[arn]; ok {
		return nil, &sfntypes.ExecutionAlreadyExists{Message: aws.String("exists")}
	}
	f.starts++
	f.executions[arn] = &fakeExecution{input: aws.ToString(in.Input), status: sfntypes.ExecutionStatusRunning}
	now := time.Now()
	return &sfn.StartExecutionOutput{ExecutionArn: aws.String(arn), StartDate: &now}, nil
}

func (f *fakeSFN) DescribeExecution(_ context.Context, in *sfn.DescribeExecutionInput, _ ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ex, ok := f.executions[aws.ToString(in.ExecutionArn)]
	if !ok {
		return nil, &sfntypes.ExecutionDoesNotExist{Message: aws.String("no such execution")}
	}
	return &sfn.DescribeExecutionOutput{ExecutionArn: in.ExecutionArn, Input: aws.String(ex.input), Status: ex.status}, nil
}

func (f *fakeSFN) SendTaskFailure(_ context.Context, in *sfn.SendTaskFailureInput, _ ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, *in)
	if f.failErr != nil {
		return nil, f.failErr
	}
	return &sfn.SendTaskFailureOutput{}, nil
}

func (f *fakeSFN) startCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts
}

// fakeReservations is an in-memory ReservationStore whose Cancel is the domain's
// reservation.Reservation.Cancel, as the DynamoDB store's is.
type fakeReservations struct {
	mu   sync.Mutex
	byID map[string]reservation.Reservation
	err  error
	// cancelErr, when set, is what Cancel answers (a store failure).
	cancelErr error
	// beforeCancel, when set, runs at the start of every Cancel with the stored reservation
	// (a concurrent writer moving it on); it may change it in place.
	beforeCancel func(*reservation.Reservation)
	cancels      int
	// writes counts the cancels that changed the stored reservation.
	writes int
}

func (f *fakeReservations) Get(_ context.Context, id string) (reservation.Reservation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return reservation.Reservation{}, f.err
	}
	r, ok := f.byID[id]
	if !ok {
		return reservation.Reservation{}, &reservation.NotFound{ReservationID: id}
	}
	return r, nil
}

func (f *fakeReservations) Cancel(_ context.Context, id string, g reservation.Guard) (reservation.Reservation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels++
	if f.cancelErr != nil {
		return reservation.Reservation{}, f.cancelErr
	}
	r, ok := f.byID[id]
	if !ok {
		return reservation.Reservation{}, &reservation.NotFound{ReservationID: id}
	}
	if f.beforeCancel != nil {
		f.beforeCancel(&r)
		f.byID[id] = r
	}
	next, err := r.Cancel(g, testNow)
	if err != nil {
		return r, err
	}
	if next.Version != r.Version {
		f.byID[id] = next
		f.writes++
	}
	return next, nil
}

func (f *fakeReservations) stored(id string) reservation.Reservation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byID[id]
}

// fakeCatalog is an in-memory SeatCatalog keyed by event and seat.
type fakeCatalog struct {
	seats map[string]CatalogSeat // key: eventId#seatId
	err   error
}

func (f *fakeCatalog) Seats(_ context.Context, eventID string, seatIDs []string) (map[string]CatalogSeat, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := map[string]CatalogSeat{}
	for _, s := range seatIDs {
		if cs, ok := f.seats[eventID+"#"+s]; ok {
			out[s] = cs
		}
	}
	return out, nil
}

func (f *fakeCatalog) EventExists(_ context.Context, eventID string) (bool, error) {
	for k := range f.seats {
		if strings.HasPrefix(k, eventID+"#") {
			return true, nil
		}
	}
	return false, nil
}

type fakePayments struct {
	auth payment.Authorization
	err  error
}

func (f *fakePayments) Retrieve(context.Context, string) (payment.Authorization, error) {
	if f.err != nil {
		return payment.Authorization{}, f.err
	}
	return f.auth, nil
}

var errBoom = errors.New("boom")
