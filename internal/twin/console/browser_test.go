//go:build linux

package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/seatsaga/seatsaga/internal/twin/console"
	"github.com/seatsaga/seatsaga/internal/twin/lambdahost"
	"github.com/seatsaga/seatsaga/internal/twin/stack"
)

// chromium finds Debian's chromium. Under CI a missing browser fails the test (make tools
// installs it); elsewhere the test is skipped with the way to install it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "the console's browser test needs Debian's chromium (make tools installs it: apt-get install -y chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

// headless runs chromium on url with the flags scripts/check-report.sh uses, with the action
// given ("--dump-dom", or "--screenshot=…" with a window size), and returns its stdout. The
// browser runs in its own process group, killed whole when the command's time is up.
func headless(t *testing.T, browser, url string, action ...string) string {
	t.Helper()
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + profile, "--virtual-time-budget=15000"}, action...)
	cmd := exec.CommandContext(ctx, browser, append(args, url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, tail(stderr.String(), 2000))
	}
	// Uncaught errors reach the page's own handler (data-console-state="error"); a script
	// that fails to load at all only shows on chromium's console log.
	for _, line := range strings.Split(stderr.String(), "\n") {
		if regexp.MustCompile(`Uncaught|SyntaxError|TypeError|ReferenceError|Content Security Policy`).MatchString(line) {
			t.Errorf("chromium console error on %s: %s", url, line)
		}
	}
	return stdout.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// htmlAttr reads an attribute of the dumped page's <html> tag.
func htmlAttr(dom, name string) string {
	tag := regexp.MustCompile(`<html[^>]*>`).FindString(dom)
	m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return m[1]
}

// checkRendered fails unless the page drew view with no script error.
func checkRendered(t *testing.T, dom, view string) {
	t.Helper()
	if state := htmlAttr(dom, "data-console-state"); state != "rendered" {
		t.Fatalf("page state %q, want rendered; errors: %s", state, regexp.MustCompile(`(?s)<div id="console-errors"[^>]*>.*?</div>`).FindString(dom))
	}
	if got := htmlAttr(dom, "data-view"); got != view {
		t.Fatalf("view %q, want %q", got, view)
	}
	if strings.Contains(dom, "Script error:") {
		t.Fatalf("the page reported a script error")
	}
}

// sale is a small sale through the API: one buyer whose claim fails (a Lambda service error,
// retried, then a function error the saga does not retry: the execution fails in "Claim
// failed"), two who pay and one whose card is declined.
type sale struct {
	failed, confirmed, declined string
	all                         []string
}

func runSale(ctx context.Context, t *testing.T, st *stack.Stack) sale {
	t.Helper()
	if _, err := st.SeedEvent(ctx, "console-sale", 4); err != nil {
		t.Fatal(err)
	}
	if err := st.Lambdas.FailBefore(stack.FnClaim, 1, lambdahost.ServiceException()); err != nil {
		t.Fatal(err)
	}
	if err := st.Lambdas.FailBefore(stack.FnClaim, 1, lambdahost.FunctionError("InjectedFailure", "the console test broke this claim")); err != nil {
		t.Fatal(err)
	}
	var s sale
	// The failing buyer goes alone, so that the armed faults are its claim's.
	s.failed = book(ctx, t, st, "ann", "S1", "pm_card_visa")
	waitClosed(ctx, t, st, s.failed)
	s.confirmed = book(ctx, t, st, "bob", "S2", "pm_card_visa")
	s.declined = book(ctx, t, st, "cyd", "S3", "pm_card_chargeDeclined")
	paid := book(ctx, t, st, "dee", "S4", "pm_card_visa")
	s.all = []string{s.failed, s.confirmed, s.declined, paid}
	for _, id := range s.all[1:] {
		waitClosed(ctx, t, st, id)
	}
	return s
}

func book(ctx context.Context, t *testing.T, st *stack.Stack, customer, seat, method string) string {
	t.Helper()
	token, err := st.Token(customer)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"seatIds":[%q],"paymentMethod":%q}`, seat, method)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.Endpoints.API+"/events/console-sale/reservations", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "console-"+customer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var created struct {
		ReservationID string `json:"reservationId"`
	}
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(raw, &created) != nil || created.ReservationID == "" {
		t.Fatalf("POST for %s: %d %s", customer, resp.StatusCode, raw)
	}
	return created.ReservationID
}

func waitClosed(ctx context.Context, t *testing.T, st *stack.Stack, id string) {
	t.Helper()
	for {
		out, err := st.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(st.ExecutionARN(id))})
		if err == nil && out.Status != sfntypes.ExecutionStatusRunning {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("execution %s did not close: %v", id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// clickRedrive is a page for the test only: the console's page with a script that clicks
// Redrive once the execution is drawn and marks <html data-check="done"> when the answer is
// shown. The console itself has no way to redrive on opening.
const clickRedrive = `(function () {
  const root = document.documentElement;
  const timer = setInterval(function () {
    const button = document.getElementById("redrive");
    if (root.dataset.consoleState === "rendered" && button && !root.dataset.clicked) {
      root.dataset.clicked = "1";
      button.click();
    }
    if (root.dataset.redrive) { clearInterval(timer); root.dataset.check = "done"; }
  }, 50);
})();`

func withRedriveClicker(t *testing.T, h http.Handler) http.Handler {
	t.Helper()
	page := httpGet(t, h, "/")
	page = strings.Replace(page, "</head>", `<script src="/check/click-redrive.js" defer></script></head>`, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /check/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	})
	mux.HandleFunc("GET /check/click-redrive.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = io.WriteString(w, clickRedrive)
	})
	mux.Handle("/", h)
	return mux
}

func httpGet(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	rec := newRecorder()
	req, _ := http.NewRequest(http.MethodGet, path, nil)
	h.ServeHTTP(rec, req)
	return rec.body.String()
}

// recorder is the least of an http.ResponseWriter, to read the page once without a server.
type recorder struct {
	header http.Header
	body   bytes.Buffer
}

func newRecorder() *recorder                    { return &recorder{header: http.Header{}} }
func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(int)             {}

// The console, served over a stack that ran a small sale, renders in headless Chromium: the
// list shows the sale's executions, the failed one opens on its graph (the failed state and
// the caught one marked, the path taken drawn) and its history (the retry and the failure,
// with inputs and outputs), a confirmed one shows the reservation's records, and Redrive
// answers on the page with what Step Functions said.
func TestConsoleRendersTheSaleInHeadlessChromium(t *testing.T) {
	browser := chromium(t)
	startCtx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	st, err := stack.Start(startCtx, stack.Config{SweepInterval: -1})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := runSale(ctx, t, st)

	h := withRedriveClicker(t, console.New(st.SFN, st.Inspector(), nil))
	url, closeConsole, err := console.Serve("127.0.0.1:0", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeConsole() })

	list := headless(t, browser, url+"/#/executions", "--dump-dom")
	checkRendered(t, list, "executions")
	for _, id := range s.all {
		if !strings.Contains(list, `data-execution="`+id+`"`) {
			t.Errorf("the list lacks execution %s", id)
		}
	}
	if got := htmlAttr(list, "data-executions"); got != "4" {
		t.Errorf("the list shows %s executions, want the sale's 4", got)
	}
	// The page's own link opens the failed execution.
	m := regexp.MustCompile(`data-execution="` + s.failed + `" data-status="FAILED"><td><a href="([^"]+)"`).FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("no link to the failed execution %s in the list", s.failed)
	}
	link := html.UnescapeString(m[1])

	failed := headless(t, browser, url+"/"+link, "--dump-dom")
	checkRendered(t, failed, "execution")
	for _, want := range []string{
		`<svg id="graph"`,
		`data-state="Claim failed" data-status="failed"`,
		`data-state="Claim seats" data-status="caught"`,
		`data-state="Confirm seats" data-status="notrun"`,
		`data-from="Claim seats" data-to="Claim failed" data-taken="1"`,
		`data-event-type="ExecutionStarted"`,
		`data-event-type="LambdaFunctionFailed"`,
		`data-event-type="ExecutionFailed"`,
		"retry 1 after",
		"InjectedFailure",
		`id="redrive"`,
		"None: the claim never wrote one.",
	} {
		if !strings.Contains(failed, want) {
			t.Errorf("the failed execution's page lacks %q", want)
		}
	}
	// A control: a state the execution never reached is not drawn as taken.
	if strings.Contains(failed, `data-to="Wait for payment authorization" data-taken="1"`) {
		t.Errorf("the failed claim's page draws a path it never took")
	}

	confirmed := headless(t, browser, url+"/#/execution/"+st.ExecutionARN(s.confirmed), "--dump-dom")
	checkRendered(t, confirmed, "execution")
	for _, want := range []string{`data-state="Confirmed" data-status="succeeded"`, "ReservationConfirmed", "captured", "CONFIRMED",
		`data-event-type="TaskSubmitted"`, `"reservationId": "` + s.confirmed + `"`} {
		if !strings.Contains(confirmed, want) {
			t.Errorf("the confirmed execution's page lacks %q", want)
		}
	}
	if strings.Contains(confirmed, `id="redrive"`) {
		t.Errorf("a succeeded execution offers Redrive")
	}

	shot := filepath.Join(t.TempDir(), "console.png")
	headless(t, browser, url+"/"+link, "--hide-scrollbars", "--window-size=1400,2400", "--screenshot="+shot)
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("no screenshot: %v", err)
	}
	if out := os.Getenv("SEATSAGA_CONSOLE_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Redrive, clicked on the page: the answer Step Functions gave is shown, an error with its
	// code (UnknownOperationException while the twin lacks RedriveExecution).
	redrive := headless(t, browser, url+"/check/"+link, "--dump-dom")
	if htmlAttr(redrive, "data-check") != "done" {
		t.Fatalf("the redrive click got no answer on the page (data-redrive %q)", htmlAttr(redrive, "data-redrive"))
	}
	// Whether the twin has RedriveExecution yet: asked of a succeeded execution, which no
	// implementation redrives, so the probe changes nothing.
	_, apiErr := st.SFN.RedriveExecution(ctx, &sfn.RedriveExecutionInput{ExecutionArn: aws.String(st.ExecutionARN(s.declined))})
	outcome := htmlAttr(redrive, "data-redrive")
	t.Logf("redrive clicked on the page: %s (the twin's RedriveExecution probe: %v)", outcome, apiErr)
	switch {
	case apiErr != nil && strings.Contains(apiErr.Error(), "UnknownOperationException"):
		if outcome != "error" || !strings.Contains(redrive, `data-error-code="UnknownOperationException"`) {
			t.Errorf("the twin has no RedriveExecution, yet the page shows %q without its error code", outcome)
		}
	case outcome == "error":
		t.Errorf("redrive failed on the page: %s", regexp.MustCompile(`<div class="banner error"[^>]*>[^<]*`).FindString(redrive))
	default:
		if outcome != "ok" {
			t.Errorf("redrive outcome %q", outcome)
		}
		out, err := st.SFN.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(st.ExecutionARN(s.failed))})
		if err != nil || aws.ToInt32(out.RedriveCount) < 1 {
			t.Errorf("the page said redriven, but the execution's redrive count is not: %v", err)
		}
	}
}
