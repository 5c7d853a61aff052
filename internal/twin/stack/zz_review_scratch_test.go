package stack

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/sale/load"
)

func TestZZReviewDumpDecisions(t *testing.T) {
	const scale = 60
	st := start(t, Config{
		Clock: clock.NewScaled(clock.Real{}, scale), Hold: 10 * time.Minute, SweepGrace: time.Minute,
		SweepInterval: time.Minute, ReconcileBackoff: 30 * time.Second, PaymentsTimeout: 2 * time.Second,
		WebhookTolerance: scale * 5 * time.Minute,
		Payments: PaymentsConfig{ThreeDSDelay: 2 * time.Minute, LateAuthorizationDelay: 12 * time.Minute,
			WebhookDuplicateRate: 0.5, WebhookReorder: true, WebhookReorderWindow: scale * time.Second, Seed: 7},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := st.RunSale(ctx, SaleOptions{
		EventID: "faulty-sale", Seats: 12, Buyers: 30, Seed: 3,
		Mix:         load.Mix{load.Pays: 2, load.Declines: 1, load.ThreeDS: 1, load.ThreeDSNo: 1, load.LateAuth: 1},
		Faults:      FaultPlan{ProviderFailBefore: 2, ProviderLoseResponse: 1, LambdaFailBefore: 1, LambdaFailAfter: 1},
		Concurrency: 10, PollInterval: 100 * time.Millisecond, BuyerTimeout: time.Minute, SettleTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("figures %+v", res.Figures())
	b, _ := json.MarshalIndent(st.Gate.Decisions(), "", " ")
	os.WriteFile("/tmp/decisions.json", b, 0o644)
}
