package stripesim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// idempotencyKeyLifetime is how long Stripe keeps an idempotency key.
const idempotencyKeyLifetime = 24 * time.Hour

type idemEntry struct {
	fingerprint string
	inFlight    bool
	status      int
	body        []byte
	created     time.Time
}

type requestInfo struct{ id, idempotencyKey string }

// response is what an endpoint produced. save is false for answers Stripe does not store
// under the idempotency key (validation failures, before the endpoint began executing).
type response struct {
	status int
	body   any
	save   bool
}

func ok(body any) response { return response{status: http.StatusOK, body: body, save: true} }

// apiError builds Stripe's error body.
func apiError(status int, typ, code, param, message string, extra map[string]any) response {
	e := map[string]any{"type": typ, "message": message}
	if code != "" {
		e["code"] = code
		e["doc_url"] = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
	}
	if param != "" {
		e["param"] = param
	}
	for k, v := range extra {
		e[k] = v
	}
	return response{status: status, body: map[string]any{"error": e}}
}

func invalidRequest(code, param, message string) response {
	return apiError(http.StatusBadRequest, "invalid_request_error", code, param, message, nil)
}

var (
	intentPath = regexp.MustCompile(`^/v1/payment_intents/([A-Za-z0-9_]+)(/(confirm|capture|cancel))?$`)
	refundPath = regexp.MustCompile(`^/v1/refunds/([A-Za-z0-9_]+)$`)
)

// Handler serves the simulated Stripe API.
func (s *Sim) Handler() http.Handler {
	return http.HandlerFunc(s.serve)
}

func (s *Sim) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	reqID := s.newID("req")
	s.mu.Unlock()
	w.Header().Set("Request-Id", reqID)
	w.Header().Set("Stripe-Version", APIVersion)

	if resp, failed := s.authenticate(r); failed {
		writeJSON(w, resp.status, resp.body)
		return
	}
	if err := r.ParseForm(); err != nil {
		resp := invalidRequest("", "", "Invalid request body: "+err.Error())
		writeJSON(w, resp.status, resp.body)
		return
	}
	params := r.Form
	req := requestInfo{id: reqID, idempotencyKey: r.Header.Get("Idempotency-Key")}

	var (
		ep  Endpoint
		act func() response
	)
	switch m := intentPath.FindStringSubmatch(r.URL.Path); {
	case r.URL.Path == "/v1/payment_intents" && r.Method == http.MethodPost:
		ep, act = EndpointCreateIntent, func() response { return s.createIntent(params, req) }
	case m != nil && m[3] == "" && r.Method == http.MethodGet:
		ep, act = EndpointRetrieveIntent, func() response { return s.retrieveIntent(m[1], params) }
	case m != nil && m[3] == "confirm" && r.Method == http.MethodPost:
		ep, act = EndpointConfirmIntent, func() response { return s.confirmIntent(m[1], params, req) }
	case m != nil && m[3] == "capture" && r.Method == http.MethodPost:
		ep, act = EndpointCaptureIntent, func() response { return s.captureIntent(m[1], params, req) }
	case m != nil && m[3] == "cancel" && r.Method == http.MethodPost:
		ep, act = EndpointCancelIntent, func() response { return s.cancelIntent(m[1], params, req) }
	case r.URL.Path == "/v1/refunds" && r.Method == http.MethodPost:
		ep, act = EndpointCreateRefund, func() response { return s.createRefund(params, req) }
	default:
		if m := refundPath.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodGet {
			ep, act = EndpointRetrieveRefund, func() response { return s.retrieveRefund(m[1], params) }
			break
		}
		resp := invalidRequest("", "", fmt.Sprintf("Unrecognized request URL (%s: %s).", r.Method, r.URL.Path))
		resp.status = http.StatusNotFound
		writeJSON(w, resp.status, resp.body)
		return
	}
	s.handle(w, r, ep, params, req, act)
}

// handle applies faults and Stripe's idempotency rules around one endpoint call.
func (s *Sim) handle(w http.ResponseWriter, r *http.Request, ep Endpoint, params url.Values, req requestInfo, act func() response) {
	key := req.idempotencyKey
	if r.Method != http.MethodPost {
		key = "" // Stripe ignores idempotency keys on GET; reads are idempotent anyway.
	}
	fingerprint := r.Method + " " + r.URL.Path + "?" + canonical(params)

	s.mu.Lock()
	faults := s.takeFaults(ep)
	if faults.failBefore || faults.rateLimited {
		s.mu.Unlock()
		resp := apiError(http.StatusInternalServerError, "api_error", "", "",
			"An unknown error occurred while processing your request (simulated).", nil)
		if faults.rateLimited {
			resp = apiError(http.StatusTooManyRequests, "invalid_request_error", "rate_limit", "",
				"Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits (simulated).", nil)
		}
		s.log.Info("fault: answered before acting", "endpoint", ep, "idempotency_key", key, "status", resp.status)
		writeJSON(w, resp.status, resp.body)
		return
	}
	var entry *idemEntry
	if key != "" {
		if e, found := s.idem[key]; found && s.now().Sub(e.created) < idempotencyKeyLifetime {
			var resp *response
			switch {
			case e.inFlight:
				conflict := apiError(http.StatusConflict, "invalid_request_error", "idempotency_key_in_use", "",
					"There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): "+key+". Please try again later.", nil)
				resp = &conflict
			case e.fingerprint != fingerprint:
				mismatch := apiError(http.StatusBadRequest, "idempotency_error", "", "",
					"Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '"+key+"' if you meant to execute a different request.", nil)
				resp = &mismatch
			}
			if resp != nil {
				s.mu.Unlock()
				writeJSON(w, resp.status, resp.body)
				return
			}
			status, body := e.status, e.body
			s.mu.Unlock()
			s.log.Info("idempotent replay", "endpoint", ep, "idempotency_key", key, "status", status)
			w.Header().Set("Idempotent-Replayed", "true")
			s.finishResponse(w, r, faults, status, body)
			return
		}
		entry = &idemEntry{fingerprint: fingerprint, inFlight: true, created: s.now()}
		s.idem[key] = entry
	}
	s.mu.Unlock()

	if faults.latency > 0 {
		select {
		case <-time.After(faults.latency):
		case <-s.done:
		}
	}

	s.mu.Lock()
	resp := act()
	body, err := json.Marshal(resp.body)
	if err != nil {
		panic(fmt.Sprintf("stripesim: render response: %v", err))
	}
	if entry != nil {
		if resp.save {
			entry.inFlight, entry.status, entry.body = false, resp.status, body
		} else {
			delete(s.idem, key)
		}
	}
	s.scheduleDeliveries()
	s.mu.Unlock()
	s.log.Info("request", "endpoint", ep, "idempotency_key", key, "status", resp.status)
	s.finishResponse(w, r, faults, resp.status, body)
}

// finishResponse writes the answer, or loses it as the armed fault says.
func (s *Sim) finishResponse(w http.ResponseWriter, r *http.Request, faults plannedFaults, status int, body []byte) {
	switch faults.lose {
	case FaultLoseResponse:
		s.log.Info("fault: holding the response until the client gives up")
		select {
		case <-r.Context().Done():
		case <-time.After(s.opts.LostResponseHold):
		case <-s.done:
		}
		panic(http.ErrAbortHandler)
	case FaultDropConnection:
		s.log.Info("fault: dropping the connection after acting")
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		panic(fmt.Sprintf("stripesim: render response: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// authenticate checks the secret key like Stripe: Bearer or Basic with the key as user.
func (s *Sim) authenticate(r *http.Request) (response, bool) {
	key := ""
	if user, _, found := r.BasicAuth(); found {
		key = user
	} else if v, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
		key = strings.TrimSpace(v)
	}
	switch {
	case key == "":
		resp := apiError(http.StatusUnauthorized, "invalid_request_error", "", "",
			"You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').", nil)
		return resp, true
	case s.opts.APIKey != "" && key != s.opts.APIKey:
		masked := key
		if len(masked) > 4 {
			masked = strings.Repeat("*", len(masked)-4) + masked[len(masked)-4:]
		}
		resp := apiError(http.StatusUnauthorized, "invalid_request_error", "api_key_invalid", "",
			"Invalid API Key provided: "+masked, nil)
		return resp, true
	}
	return response{}, false
}

// canonical encodes params in a stable order for idempotency comparison.
func canonical(params url.Values) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		vs := append([]string(nil), params[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(v) + "&")
		}
	}
	return b.String()
}

// checkParams rejects parameters the endpoint does not know, as Stripe does. Allowed
// entries ending in "[" admit any key under that prefix (metadata[…], expand[…]).
func checkParams(params url.Values, allowed ...string) *response {
	for k := range params {
		known := false
		for _, a := range allowed {
			if k == a || strings.HasSuffix(a, "[") && strings.HasPrefix(k, a) {
				known = true
				break
			}
		}
		if !known {
			resp := invalidRequest("parameter_unknown", k, "Received unknown parameter: "+k)
			return &resp
		}
	}
	return nil
}

// list collects an array parameter sent as name[0]=…, name[]=… or name=….
func list(params url.Values, name string) []string {
	var out []string
	for k, vs := range params {
		if k == name || k == name+"[]" || strings.HasPrefix(k, name+"[") && strings.HasSuffix(k, "]") {
			out = append(out, vs...)
		}
	}
	sort.Strings(out)
	return out
}

// dict collects a hash parameter sent as name[key]=value.
func dict(params url.Values, name string) map[string]string {
	out := map[string]string{}
	for k, vs := range params {
		if inner, found := strings.CutPrefix(k, name+"["); found && strings.HasSuffix(inner, "]") && len(vs) > 0 {
			out[strings.TrimSuffix(inner, "]")] = vs[0]
		}
	}
	return out
}

func expands(params url.Values, field string) bool {
	for _, e := range list(params, "expand") {
		if e == field {
			return true
		}
	}
	return false
}

func parseAmount(params url.Values, name string, required bool) (int64, *response) {
	v := params.Get(name)
	if v == "" {
		if required {
			resp := invalidRequest("parameter_missing", name, "Missing required param: "+name+".")
			return 0, &resp
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		resp := invalidRequest("parameter_invalid_integer", name, "Invalid positive integer: "+name)
		return 0, &resp
	}
	return n, nil
}

var currencyPattern = regexp.MustCompile(`^[a-z]{3}$`)
