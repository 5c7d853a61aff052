package awsgate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatsaga/seatsaga/internal/clock"
	"github.com/seatsaga/seatsaga/internal/deploy"
	"github.com/seatsaga/seatsaga/internal/twin/serve"
)

// Defaults of Options: the local stack's region and account, and the access key id
// dynamodblocal.NewClient signs with.
const (
	DefaultRegion              = "us-east-1"
	DefaultAccountID           = "000000000000"
	DefaultDynamoDBAccessKeyID = "local"
)

// maxRequestBytes bounds a request body; DynamoDB's own limit is 16 MB.
const maxRequestBytes = 16 << 20

// closeTimeout bounds how long Close waits for calls in flight before cutting them off.
const closeTimeout = 5 * time.Second

// TaskTokenResolver finds the state machine whose execution issued a task token.
type TaskTokenResolver func(taskToken string) (stateMachineARN string, ok bool)

// Options configures a Gate.
type Options struct {
	// Region and AccountID are those of every ARN the gate builds (default DefaultRegion and
	// DefaultAccountID); they must be the ones the policies' ARNs were rendered with.
	Region    string
	AccountID string

	// DynamoDBEndpoint is DynamoDB Local's base URL, e.g. http://127.0.0.1:8000; DynamoDB and
	// DynamoDB Streams calls go there. Empty answers those calls ServiceUnavailableException.
	DynamoDBEndpoint string
	// DynamoDBAccessKeyID is the access key id DynamoDB and DynamoDB Streams calls are
	// forwarded under (default DefaultDynamoDBAccessKeyID). DynamoDB Local accepts only
	// alphanumeric ids and, without -sharedDb, keeps one database per id, so every caller's
	// calls must reach it under one id: the one the stack's direct clients sign with.
	DynamoDBAccessKeyID string
	// StepFunctionsEndpoint is the local Step Functions server's base URL. Empty answers Step
	// Functions calls ServiceUnavailableException.
	StepFunctionsEndpoint string

	// TaskStateMachine finds the state machine a task token belongs to, the resource of
	// SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat. Without it, or for a token it
	// does not know, those calls are authorized on UnknownTaskToken: a caller granted the
	// action on any resource is let through and the Step Functions server answers
	// InvalidToken or TaskDoesNotExist, as AWS does.
	TaskStateMachine TaskTokenResolver

	// LoseResponse, when set, is asked after every Step Functions call the service answered
	// with success, with the caller's role and the operation: true drops the connection
	// instead of answering, so the call took effect and its caller sees a broken connection,
	// which the SDK retries (a chaos run's lost response).
	LoseResponse func(role, operation string) bool

	// Clock stamps the versions of secrets (default clock.Real{}).
	Clock clock.Clock
	// Logger receives a warning for every denial (nil discards).
	Logger *slog.Logger
}

// Gate is the local AWS front door; see the package documentation. It is an http.Handler;
// Start also serves it on its own listener.
type Gate struct {
	opts    Options
	log     *slog.Logger
	deriver requestDeriver

	// principals maps access key ids to callers. It is read on every call and written only
	// while the stack starts, so writers replace the whole map (under principalsMu).
	principals   atomic.Pointer[map[string]*principal]
	principalsMu sync.Mutex

	transport *http.Transport
	dynamo    *httputil.ReverseProxy // nil without DynamoDBEndpoint
	states    *httputil.ReverseProxy // nil without StepFunctionsEndpoint

	secrets   *secretStore
	buses     *eventBuses
	decisions decisionLog
	calls     callLog

	requestIDs atomic.Uint64

	server serve.Server
}

// New builds a gate. It fails only on an endpoint that is not an absolute http(s) URL.
func New(o Options) (*Gate, error) {
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.AccountID == "" {
		o.AccountID = DefaultAccountID
	}
	if o.DynamoDBAccessKeyID == "" {
		o.DynamoDBAccessKeyID = DefaultDynamoDBAccessKeyID
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	g := &Gate{
		opts:      o,
		log:       o.Logger,
		transport: newTransport(),
		secrets:   newSecretStore(o.Region, o.AccountID, o.Clock.Now),
		buses:     newEventBuses(o.Region, o.AccountID),
		server:    serve.Server{Name: "awsgate", IdleTimeout: 2 * time.Minute, ShutdownTimeout: closeTimeout},
	}
	g.deriver = requestDeriver{
		region: o.Region, account: o.AccountID,
		taskStateMachine: o.TaskStateMachine,
		secretARN:        g.secrets.arnOf,
	}
	empty := map[string]*principal{}
	g.principals.Store(&empty)
	var err error
	if g.dynamo, err = g.newProxy("DynamoDB", o.DynamoDBEndpoint); err != nil {
		return nil, err
	}
	if g.states, err = g.newProxy("Step Functions", o.StepFunctionsEndpoint); err != nil {
		return nil, err
	}
	return g, nil
}

// Start serves the gate on addr (e.g. "127.0.0.1:0" for a free loopback port) and returns its
// base URL, the BaseEndpoint of every client that should go through it.
func (g *Gate) Start(addr string) (string, error) { return g.server.Start(addr, g) }

// URL is the base URL Start serves on; empty before Start.
func (g *Gate) URL() string { return g.server.URL() }

// Close stops serving: it waits up to five seconds for calls in flight, then cuts them off,
// and drops the idle connections to the services behind the gate.
func (g *Gate) Close() error {
	defer g.transport.CloseIdleConnections()
	if err := g.server.Close(); err != nil {
		return fmt.Errorf("awsgate: close: %w", err)
	}
	return nil
}

// AddPrincipal registers the caller who signs with accessKeyID as the role roleName, allowed
// what statements allow (a function's deploy.Function.Policy, rendered with local ARNs). Its
// session is named after the role; AddAssumedRole names it. Registering a key again replaces
// it.
func (g *Gate) AddPrincipal(accessKeyID, roleName string, statements []deploy.Statement) {
	g.AddAssumedRole(accessKeyID, roleName, roleName, statements)
}

// AddAssumedRole registers the caller who signs with accessKeyID as session sessionName of
// role roleName (on Lambda, the session is the function's name), allowed what statements
// allow. Denials name it arn:aws:sts::<account>:assumed-role/<roleName>/<sessionName>.
func (g *Gate) AddAssumedRole(accessKeyID, roleName, sessionName string, statements []deploy.Statement) {
	g.addPrincipal(&principal{
		accessKeyID: accessKeyID,
		arn:         "arn:aws:sts::" + g.opts.AccountID + ":assumed-role/" + roleName + "/" + sessionName,
		role:        roleName,
		statements:  cloneStatements(statements),
	})
}

// AddAdmin registers the caller who signs with accessKeyID as the account's root, allowed
// everything: the stack's own clients that create tables, seed and check.
func (g *Gate) AddAdmin(accessKeyID string) {
	g.addPrincipal(&principal{
		accessKeyID: accessKeyID,
		arn:         "arn:aws:iam::" + g.opts.AccountID + ":root",
		statements:  []deploy.Statement{{Actions: []string{"*"}, Resources: []string{"*"}}},
	})
}

// addPrincipal panics on an access key id no SigV4 credential could carry: that is a mistake
// in the caller's code, not a condition to handle.
func (g *Gate) addPrincipal(p *principal) {
	if p.accessKeyID == "" {
		panic("awsgate: empty access key id")
	}
	for i := 0; i < len(p.accessKeyID); i++ {
		if c := p.accessKeyID[i]; c == '/' || c == ',' || c == ' ' || c == '=' {
			panic(fmt.Sprintf("awsgate: access key id %q cannot appear in a SigV4 credential", p.accessKeyID))
		}
	}
	g.principalsMu.Lock()
	defer g.principalsMu.Unlock()
	next := maps.Clone(*g.principals.Load())
	next[p.accessKeyID] = p
	g.principals.Store(&next)
}

// CreateSecret creates a secret holding value as its current version and returns its ARN,
// arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 random characters>.
func (g *Gate) CreateSecret(name, value string) (string, error) {
	arn, err := g.secrets.create(name, value)
	if err != nil {
		return "", fmt.Errorf("awsgate: create secret: %w", err)
	}
	return arn, nil
}

// AddEventBus creates the event bus name (use "default" for the account's default bus),
// whose PutEvents entries go to sink, and returns its ARN,
// arn:aws:events:<region>:<account>:event-bus/<name>.
func (g *Gate) AddEventBus(name string, sink EventSink) (string, error) {
	arn, err := g.buses.add(name, sink)
	if err != nil {
		return "", fmt.Errorf("awsgate: add event bus: %w", err)
	}
	return arn, nil
}

// TableARN is the ARN policies must name a DynamoDB table by (its full name, prefix
// included); indexes are <TableARN>/index/<name>, streams <TableARN>/stream/<label>.
func (g *Gate) TableARN(tableName string) string { return g.deriver.tableARN(tableName) }

// EventBusARN is the ARN policies must name an event bus by.
func (g *Gate) EventBusARN(name string) string { return g.buses.arn(name) }

// Decisions lists every authorization decision taken so far, counted: one entry per
// principal, operation, action, resource and outcome.
func (g *Gate) Decisions() []Decision { return g.decisions.all() }

// Calls lists the calls the gate let through so far, counted by the caller's role, the service
// and the operation: one count per HTTP call, however many authorization requests it needed,
// since AWS bills and throttles calls. A denied call or one the gate could not read is not
// counted: it reached no service.
func (g *Gate) Calls() []Call { return g.calls.all() }

// Denials lists the decisions that denied.
func (g *Gate) Denials() []Decision {
	var out []Decision
	for _, d := range g.decisions.all() {
		if !d.Allowed {
			out = append(out, d)
		}
	}
	return out
}

// ServeHTTP answers one AWS JSON-protocol call: identify, authorize, then forward or serve.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	svc, op := serviceFor(target)

	caller, apiErr := g.identify(r.Header.Get("Authorization"), svc)
	if apiErr != nil {
		g.writeError(w, svc, apiErr)
		return
	}
	if svc == nil || r.Method != http.MethodPost {
		g.writeError(w, svc, unknownOperation(target))
		return
	}
	body, apiErr := readBody(r)
	if apiErr != nil {
		g.writeError(w, svc, apiErr)
		return
	}
	reqs, apiErr := g.deriver.requests(svc, op, body)
	if apiErr != nil {
		g.writeError(w, svc, apiErr)
		return
	}
	if denied, ok := g.authorize(caller, target, reqs); !ok {
		g.writeError(w, svc, accessDenied(caller.arn, denied))
		return
	}

	switch svc {
	case dynamoDB, dynamoDBStreams:
		// DynamoDB Local checks no signature, so swapping the key id breaks nothing.
		r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"),
			"Credential="+caller.accessKeyID+"/", "Credential="+g.opts.DynamoDBAccessKeyID+"/", 1))
		g.forward(w, r, caller, svc, op, g.dynamo, body)
	case stepFunctions:
		if g.opts.LoseResponse == nil {
			g.forward(w, r, caller, svc, op, g.states, body)
			return
		}
		held := &heldResponse{header: http.Header{}}
		g.forward(held, r, caller, svc, op, g.states, body)
		if held.status < 300 && g.opts.LoseResponse(caller.role, op) {
			g.log.Info("awsgate: response lost (injected)", "principal", caller.arn, "operation", op)
			panic(http.ErrAbortHandler) // the server closes the connection without a response
		}
		held.sendTo(w)
	case secretsManager:
		g.calls.record(caller, svc, op)
		var out any
		if op == "GetSecretValue" {
			out, apiErr = g.secrets.getSecretValue(body)
		} else {
			out, apiErr = g.secrets.putSecretValue(body)
		}
		g.answer(w, svc, out, apiErr)
	case eventBridge:
		g.calls.record(caller, svc, op)
		out, apiErr := g.buses.putEvents(r.Context(), body)
		g.answer(w, svc, out, apiErr)
	}
}

// identify finds the registered caller an Authorization header names.
func (g *Gate) identify(authorization string, svc *service) (*principal, *apiError) {
	cred, err := parseAuthorization(authorization)
	if errors.Is(err, errNoAuthorization) {
		return nil, unrecognizedClient()
	}
	if err != nil {
		return nil, incompleteSignature(err.Error())
	}
	p, ok := (*g.principals.Load())[cred.AccessKeyID]
	if !ok {
		return nil, unrecognizedClient()
	}
	if svc != nil && cred.Service != svc.signingName {
		return nil, invalidSignature(fmt.Sprintf("Credential should be scoped to correct service: '%s'.", svc.signingName))
	}
	return p, nil
}

// authorize evaluates every request and records each decision; it answers the first denied
// request, if any.
func (g *Gate) authorize(caller *principal, operation string, reqs []Request) (Request, bool) {
	var denied Request
	allowedAll := true
	for _, req := range reqs {
		allowed := Allowed(caller.statements, req)
		g.decisions.record(caller, operation, req, allowed)
		if !allowed {
			g.log.Warn("awsgate: access denied", "principal", caller.arn, "action", req.Action,
				"resource", req.Resource, "operation", operation)
			if allowedAll {
				denied, allowedAll = req, false
			}
		}
	}
	return denied, allowedAll
}

// answer writes a served operation's result, or its error.
func (g *Gate) answer(w http.ResponseWriter, svc *service, out any, apiErr *apiError) {
	if apiErr != nil {
		g.writeError(w, svc, apiErr)
		return
	}
	writeResult(w, svc, g.newRequestID(), out)
}

// writeError answers e with a request id of the gate's; forwarded calls carry the service's.
func (g *Gate) writeError(w http.ResponseWriter, svc *service, e *apiError) {
	writeError(w, svc, g.newRequestID(), e)
}

// forward sends the call on, with the body already read, unchanged, and counts it: whatever
// the service answers (a failed condition, a throttle), the call reached it.
func (g *Gate) forward(w http.ResponseWriter, r *http.Request, caller *principal, svc *service, op string,
	proxy *httputil.ReverseProxy, body []byte) {
	if proxy == nil {
		g.writeError(w, svc, coralError(http.StatusServiceUnavailable, "ServiceUnavailableException", "message",
			"awsgate: no endpoint is configured for "+svc.targetPrefix+"*"))
		return
	}
	g.calls.record(caller, svc, op)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	proxy.ServeHTTP(w, r)
}

// readBody reads the whole body once: the gate decodes what it needs from these bytes and
// forwards the same bytes.
func readBody(r *http.Request) ([]byte, *apiError) {
	if r.ContentLength > maxRequestBytes {
		return nil, coralError(http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "message",
			"Request body of "+strconv.FormatInt(r.ContentLength, 10)+" bytes is over the limit")
	}
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
		if err == nil && len(body) > maxRequestBytes {
			return nil, coralError(http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "message", "Request body is over the limit")
		}
	}
	if err != nil {
		return nil, serializationError("cannot read the request body: %v", err)
	}
	return body, nil
}

func (g *Gate) newRequestID() string {
	return "awsgate-" + strconv.FormatUint(g.requestIDs.Add(1), 36)
}

// newTransport is the one keep-alive transport every forwarded call shares. A local sale runs
// hundreds of concurrent DynamoDB calls through it, so it keeps that many connections idle
// rather than dialing per call; it neither adds nor undoes compression, so bodies pass as the
// client and the service wrote them.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}

// newProxy forwards to endpoint; nil for an empty endpoint.
func (g *Gate) newProxy(name, endpoint string) (*httputil.ReverseProxy, error) {
	if endpoint == "" {
		return nil, nil
	}
	target, err := url.Parse(endpoint)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, fmt.Errorf("awsgate: %s endpoint %q is not an absolute http(s) URL", name, endpoint)
	}
	return &httputil.ReverseProxy{
		Rewrite:    func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:  g.transport,
		BufferPool: copyBuffers,
		ErrorLog:   slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				// The caller gave up; nobody reads an answer.
				return
			}
			g.log.Warn("awsgate: forwarding failed", "service", name, "endpoint", endpoint, "error", err)
			g.writeError(w, nil, coralError(http.StatusBadGateway, "InternalFailure", "message",
				fmt.Sprintf("awsgate: %s at %s did not answer: %v", name, endpoint, err)))
		},
	}, nil
}

// copyBuffers lends ReverseProxy its 32 KiB copy buffers instead of allocating one per call.
var copyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

// heldResponse keeps a forwarded answer so that the gate can still decide to lose it.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(b []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return h.body.Write(b)
}

func (h *heldResponse) sendTo(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	w.WriteHeader(max(h.status, http.StatusOK))
	_, _ = w.Write(h.body.Bytes())
}
