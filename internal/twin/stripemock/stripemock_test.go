package stripemock_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seatsaga/seatsaga/internal/twin/stripemock"
)

func TestStartServesAndStops(t *testing.T) {
	s := stripemock.StartT(t)
	req, _ := http.NewRequest("GET", s.URL+"/v1/payment_intents/pi_123", nil)
	req.Header.Set("Authorization", "Bearer sk_test_123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d", resp.StatusCode)
	}
	s.Stop()
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("stripe-mock still answers after Stop")
	}
	s.Stop()
}

func TestMissingBinaryNamesMakeTools(t *testing.T) {
	t.Setenv(stripemock.EnvBinary, filepath.Join(t.TempDir(), "stripe-mock"))
	_, err := stripemock.BinaryPath()
	if !errors.Is(err, stripemock.ErrNotInstalled) || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("err = %v", err)
	}
}

func TestBinaryFoundFromModuleRoot(t *testing.T) {
	t.Setenv(stripemock.EnvBinary, "")
	os.Unsetenv(stripemock.EnvBinary)
	p, err := stripemock.BinaryPath()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p, filepath.Join("tools", "bin", "stripe-mock")) {
		t.Fatalf("path = %s", p)
	}
}
