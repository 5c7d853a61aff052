// Package cognito is a local stand-in for the Amazon Cognito user pools API, enough for an
// operator's tools and a front end to sign a customer in against the local stack: one user
// pool that signs in by email (as the stack's pool does) with one app client, speaking the AWS
// JSON 1.1 protocol (X-Amz-Target: AWSCognitoIdentityProviderService.<Operation>) to
// aws-sdk-go-v2's cognitoidentityprovider client pointed at it with BaseEndpoint.
//
// Operations: AdminCreateUser, AdminSetUserPassword, AdminGetUser, InitiateAuth
// (USER_PASSWORD_AUTH) and AdminInitiateAuth (ADMIN_USER_PASSWORD_AUTH), each refusing as
// Cognito does, with Cognito's error codes (UsernameExistsException, UserNotFoundException,
// NotAuthorizedException, InvalidPasswordException, InvalidParameterException,
// ResourceNotFoundException). A successful sign-in returns an ID token signed by the local API
// gateway's authorizer (Options.Tokens), carrying sub, token_use "id", cognito:username, email
// and aud as a user pool's does, so the gateway accepts it on the customer routes.
//
// What it leaves out: SRP, MFA, refresh, sign-up, email delivery (nothing is ever sent), and
// request signatures (it verifies none, as DynamoDB Local does not). Its tokens are the local
// gateway's, not JWTs signed with the pool's keys.
package cognito

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/mail"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/seatsaga/seatsaga/internal/twin/apigateway"
	"github.com/seatsaga/seatsaga/internal/twin/serve"
)

// Auth flows an app client may allow, as Cognito names them.
const (
	FlowUserSRP           = "ALLOW_USER_SRP_AUTH"
	FlowUserPassword      = "ALLOW_USER_PASSWORD_AUTH"
	FlowAdminUserPassword = "ALLOW_ADMIN_USER_PASSWORD_AUTH"
	FlowRefreshToken      = "ALLOW_REFRESH_TOKEN_AUTH"
)

// DeployedClientFlows are the auth flows of the stack's app client (infra/stack/api.go): SRP
// for browsers, admin password sign-in for the operator's smoke test, refresh.
var DeployedClientFlows = []string{FlowAdminUserPassword, FlowUserSRP, FlowRefreshToken}

// PasswordPolicy is what a password must satisfy.
type PasswordPolicy struct {
	MinLength                                                         int
	RequireLowercase, RequireUppercase, RequireDigits, RequireSymbols bool
}

// DeployedPasswordPolicy is the stack's user pool policy (infra/stack/api.go).
func DeployedPasswordPolicy() PasswordPolicy {
	return PasswordPolicy{MinLength: 12, RequireLowercase: true, RequireUppercase: true, RequireDigits: true, RequireSymbols: true}
}

// Options configure a Server.
type Options struct {
	// Tokens signs the tokens a sign-in returns; give it the local API gateway's authorizer
	// (the twin stack's Auth) so the gateway accepts them. Required.
	Tokens *apigateway.DevAuthorizer
	// Region names the pool's region in its id and issuer (default us-east-1).
	Region string
	// UserPoolID is the one pool's id (default "<Region>_seatsagaLocal").
	UserPoolID string
	// ClientID is the one app client's id (default: random, like Cognito's).
	ClientID string
	// ClientAuthFlows are the flows the app client allows (default DeployedClientFlows).
	ClientAuthFlows []string
	// Policy is the pool's password policy (nil: DeployedPasswordPolicy).
	Policy *PasswordPolicy
	// TokenValidity is how long an ID or access token lasts (default 1 hour, Cognito's).
	TokenValidity time.Duration
	// Now is the clock tokens are dated by (default Tokens.Now, else the wall clock).
	Now    func() time.Time
	Logger *slog.Logger
}

// User statuses as Cognito reports them.
const (
	StatusForceChangePassword = "FORCE_CHANGE_PASSWORD"
	StatusConfirmed           = "CONFIRMED"
)

type user struct {
	sub        string
	email      string
	attributes map[string]string
	password   string
	status     string
	created    time.Time
	modified   time.Time
}

// Server is the local Cognito.
type Server struct {
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	users map[string]*user // by lower-case email

	server serve.Server
}

// New returns a Server for opts; it panics without Options.Tokens, which nothing could verify
// a token without.
func New(opts Options) *Server {
	if opts.Tokens == nil {
		panic("cognito: Options.Tokens is required")
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if opts.UserPoolID == "" {
		opts.UserPoolID = opts.Region + "_seatsagaLocal"
	}
	if opts.ClientID == "" {
		opts.ClientID = randomHex(13)
	}
	if opts.ClientAuthFlows == nil {
		opts.ClientAuthFlows = DeployedClientFlows
	}
	if opts.Policy == nil {
		p := DeployedPasswordPolicy()
		opts.Policy = &p
	}
	if opts.TokenValidity <= 0 {
		opts.TokenValidity = time.Hour
	}
	if opts.Now == nil {
		opts.Now = opts.Tokens.Now
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{opts: opts, log: log, users: map[string]*user{}, server: serve.Server{Name: "cognito"}}
}

// UserPoolID is the pool's id.
func (s *Server) UserPoolID() string { return s.opts.UserPoolID }

// ClientID is the app client's id.
func (s *Server) ClientID() string { return s.opts.ClientID }

// Issuer is the iss claim of the pool's tokens, as Cognito spells it.
func (s *Server) Issuer() string {
	return "https://cognito-idp." + s.opts.Region + ".amazonaws.com/" + s.opts.UserPoolID
}

// Start listens on addr (e.g. 127.0.0.1:0) and returns the endpoint for BaseEndpoint.
func (s *Server) Start(addr string) (string, error) { return s.server.Start(addr, s) }

// Close stops the server, waiting at most a few seconds for requests in flight.
func (s *Server) Close() error { return s.server.Close() }

// targetPrefix starts every X-Amz-Target the service accepts.
const targetPrefix = "AWSCognitoIdentityProviderService."

// ServeHTTP implements http.Handler: one POST per operation, named by X-Amz-Target.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	if r.Method != http.MethodPost || !ok {
		writeError(w, &apiError{status: http.StatusBadRequest, code: "UnknownOperationException", message: "expected POST with X-Amz-Target " + targetPrefix + "<Operation>"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, invalidParameter("could not read the request body"))
		return
	}
	handlers := map[string]func([]byte) (any, *apiError){
		"AdminCreateUser":      s.adminCreateUser,
		"AdminSetUserPassword": s.adminSetUserPassword,
		"AdminGetUser":         s.adminGetUser,
		"InitiateAuth":         s.initiateAuth,
		"AdminInitiateAuth":    s.adminInitiateAuth,
	}
	handle, ok := handlers[op]
	if !ok {
		writeError(w, &apiError{status: http.StatusBadRequest, code: "UnknownOperationException", message: "the local Cognito does not serve " + op})
		return
	}
	out, apiErr := handle(body)
	if apiErr != nil {
		s.log.Info("cognito: refused", "operation", op, "code", apiErr.code, "message", apiErr.message)
		writeError(w, apiErr)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Requestid", randomHex(16))
	_ = json.NewEncoder(w).Encode(out)
}

// attribute is Cognito's AttributeType.
type attribute struct {
	Name  string `json:"Name"`
	Value string `json:"Value"`
}

// userType is Cognito's UserType (AdminCreateUser) and the body of AdminGetUser.
type userType struct {
	Username             string      `json:"Username"`
	Attributes           []attribute `json:"Attributes,omitempty"`
	UserAttributes       []attribute `json:"UserAttributes,omitempty"`
	Enabled              bool        `json:"Enabled"`
	UserStatus           string      `json:"UserStatus"`
	UserCreateDate       float64     `json:"UserCreateDate"`
	UserLastModifiedDate float64     `json:"UserLastModifiedDate"`
}

func (s *Server) adminCreateUser(body []byte) (any, *apiError) {
	var in struct {
		poolInput
		Username          string
		UserAttributes    []attribute
		TemporaryPassword string
		MessageAction     string
	}
	if e := s.decodeAdmin(body, &in); e != nil {
		return nil, e
	}
	// The pool signs in by email: Cognito takes the email as the user name it is created
	// under and gives the user a generated one (the sub).
	if _, err := mail.ParseAddress(in.Username); err != nil || strings.ContainsAny(in.Username, "<> ") {
		return nil, invalidParameter("Username should be an email.")
	}
	switch in.MessageAction {
	case "", "SUPPRESS":
	case "RESEND":
		// Resending an invitation needs an existing user and would send an email.
		return nil, invalidParameter("the local Cognito sends no email; use MessageAction SUPPRESS")
	default:
		return nil, invalidParameter("1 validation error detected: Value '" + in.MessageAction + "' at 'messageAction' failed to satisfy constraint: Member must satisfy enum value set: [RESEND, SUPPRESS]")
	}
	attrs := map[string]string{}
	for _, a := range in.UserAttributes {
		attrs[a.Name] = a.Value
	}
	if e, ok := attrs["email"]; ok && !strings.EqualFold(e, in.Username) {
		return nil, invalidParameter("the email attribute must be the Username in a pool that signs in by email")
	}
	password := in.TemporaryPassword
	if password == "" {
		password = "Tmp-" + randomHex(8) + "aA1!"
	} else if e := s.checkPassword(password); e != nil {
		return nil, e
	}
	key := strings.ToLower(in.Username)
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.users[key]; exists {
		return nil, &apiError{status: http.StatusBadRequest, code: "UsernameExistsException", message: "An account with the given email already exists."}
	}
	attrs["email"] = in.Username
	u := &user{sub: newSub(), email: in.Username, attributes: attrs, password: password, status: StatusForceChangePassword, created: now, modified: now}
	u.attributes["sub"] = u.sub
	s.users[key] = u
	view := u.view()
	view.Attributes, view.UserAttributes = view.UserAttributes, nil
	return map[string]any{"User": view}, nil
}

func (s *Server) adminSetUserPassword(body []byte) (any, *apiError) {
	var in struct {
		poolInput
		Username  string
		Password  string
		Permanent bool
	}
	if e := s.decodeAdmin(body, &in); e != nil {
		return nil, e
	}
	if e := s.checkPassword(in.Password); e != nil {
		return nil, e
	}
	return s.withUser(in.Username, func(u *user) any {
		u.password, u.modified = in.Password, s.opts.Now()
		u.status = StatusForceChangePassword
		if in.Permanent {
			u.status = StatusConfirmed
		}
		return struct{}{}
	})
}

func (s *Server) adminGetUser(body []byte) (any, *apiError) {
	var in struct {
		poolInput
		Username string
	}
	if e := s.decodeAdmin(body, &in); e != nil {
		return nil, e
	}
	return s.withUser(in.Username, func(u *user) any { return u.view() })
}

type authInput struct {
	poolInput
	ClientId       string
	AuthFlow       string
	AuthParameters map[string]string
}

func (s *Server) initiateAuth(body []byte) (any, *apiError) {
	var in authInput
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	if in.AuthFlow != "USER_PASSWORD_AUTH" {
		return nil, invalidParameter("the local Cognito signs in with USER_PASSWORD_AUTH only (and ADMIN_USER_PASSWORD_AUTH through AdminInitiateAuth)")
	}
	return s.passwordAuth(in, FlowUserPassword)
}

func (s *Server) adminInitiateAuth(body []byte) (any, *apiError) {
	var in authInput
	if e := s.decodeAdmin(body, &in); e != nil {
		return nil, e
	}
	if in.AuthFlow != "ADMIN_USER_PASSWORD_AUTH" {
		return nil, invalidParameter("the local Cognito signs in with ADMIN_USER_PASSWORD_AUTH only (and USER_PASSWORD_AUTH through InitiateAuth)")
	}
	return s.passwordAuth(in, FlowAdminUserPassword)
}

// passwordAuth signs a user in with USERNAME and PASSWORD when the client allows flow.
func (s *Server) passwordAuth(in authInput, flow string) (any, *apiError) {
	if in.ClientId != s.opts.ClientID {
		return nil, &apiError{status: http.StatusBadRequest, code: "ResourceNotFoundException", message: "User pool client " + in.ClientId + " does not exist."}
	}
	if !slices.Contains(s.opts.ClientAuthFlows, flow) {
		return nil, invalidParameter(strings.TrimPrefix(flow, "ALLOW_") + " flow not enabled for this client")
	}
	username, password := in.AuthParameters["USERNAME"], in.AuthParameters["PASSWORD"]
	if username == "" || password == "" {
		return nil, invalidParameter("Missing required parameter USERNAME or PASSWORD")
	}
	s.mu.Lock()
	u := s.lookup(username)
	var known user
	if u != nil {
		known = *u
	}
	s.mu.Unlock()
	// The stack's client prevents user existence errors: an unknown user and a wrong password
	// get the same answer.
	if u == nil || known.password != password {
		return nil, &apiError{status: http.StatusBadRequest, code: "NotAuthorizedException", message: "Incorrect username or password."}
	}
	if known.status == StatusForceChangePassword {
		return map[string]any{
			"ChallengeName":       "NEW_PASSWORD_REQUIRED",
			"Session":             randomHex(32),
			"ChallengeParameters": map[string]string{"USER_ID_FOR_SRP": known.sub, "requiredAttributes": "[]", "userAttributes": "{}"},
		}, nil
	}
	now := s.opts.Now()
	base := apigateway.Claims{
		Subject: known.sub, Issuer: s.Issuer(), IssuedAt: now.Unix(), Expires: now.Add(s.opts.TokenValidity).Unix(),
		Username: known.sub,
	}
	id := base
	id.TokenUse, id.Email, id.Audience = apigateway.TokenUseID, known.email, s.opts.ClientID
	access := base
	access.TokenUse = "access"
	idToken, err := s.opts.Tokens.Sign(id)
	if err != nil {
		return nil, internalError(err)
	}
	accessToken, err := s.opts.Tokens.Sign(access)
	if err != nil {
		return nil, internalError(err)
	}
	return map[string]any{
		"ChallengeParameters": map[string]string{},
		"AuthenticationResult": map[string]any{
			"IdToken":      idToken,
			"AccessToken":  accessToken,
			"RefreshToken": "local-refresh." + randomHex(24),
			"ExpiresIn":    int(s.opts.TokenValidity / time.Second),
			"TokenType":    "Bearer",
		},
	}, nil
}

// decode reads a request body as the SDK sends it.
func decode(body []byte, dst any) *apiError {
	if err := json.Unmarshal(body, dst); err != nil {
		return &apiError{status: http.StatusBadRequest, code: "SerializationException", message: err.Error()}
	}
	return nil
}

// poolInput is the UserPoolId every Admin* request names; the requests embed it.
type poolInput struct {
	UserPoolId string
}

func (p *poolInput) pool() string { return p.UserPoolId }

// decodeAdmin decodes an Admin* request and checks that it names the pool.
func (s *Server) decodeAdmin(body []byte, in interface{ pool() string }) *apiError {
	if e := decode(body, in); e != nil {
		return e
	}
	return s.checkPool(in.pool())
}

func (s *Server) checkPool(id string) *apiError {
	if id != s.opts.UserPoolID {
		return &apiError{status: http.StatusBadRequest, code: "ResourceNotFoundException", message: "User pool " + id + " does not exist."}
	}
	return nil
}

// withUser answers f(u) for the user username names (see lookup), with s.mu held;
// UserNotFoundException when there is none.
func (s *Server) withUser(username string, f func(u *user) any) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.lookup(username)
	if u == nil {
		return nil, userNotFound()
	}
	return f(u), nil
}

// lookup finds a user by email or by its generated user name (sub); s.mu is held.
func (s *Server) lookup(username string) *user {
	if u, ok := s.users[strings.ToLower(username)]; ok {
		return u
	}
	for _, u := range s.users {
		if u.sub == username {
			return u
		}
	}
	return nil
}

// checkPassword applies the pool's policy with Cognito's messages.
func (s *Server) checkPassword(pw string) *apiError {
	p := s.opts.Policy
	var lower, upper, digit, symbol bool
	for _, r := range pw {
		switch {
		case unicode.IsLower(r):
			lower = true
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsDigit(r):
			digit = true
		case strings.ContainsRune(`^$*.[]{}()?"!@#%&/\,><':;|_~`+"`=+-", r):
			symbol = true
		}
	}
	var reason string
	switch {
	case len(pw) < p.MinLength:
		reason = "Password not long enough"
	case p.RequireLowercase && !lower:
		reason = "Password must have lowercase characters"
	case p.RequireUppercase && !upper:
		reason = "Password must have uppercase characters"
	case p.RequireDigits && !digit:
		reason = "Password must have numeric characters"
	case p.RequireSymbols && !symbol:
		reason = "Password must have symbol characters"
	default:
		return nil
	}
	return &apiError{status: http.StatusBadRequest, code: "InvalidPasswordException", message: "Password did not conform with policy: " + reason}
}

func (u *user) view() userType {
	names := make([]string, 0, len(u.attributes))
	for name := range u.attributes {
		names = append(names, name)
	}
	sort.Strings(names)
	attrs := make([]attribute, 0, len(names))
	for _, name := range names {
		attrs = append(attrs, attribute{Name: name, Value: u.attributes[name]})
	}
	return userType{
		Username: u.sub, UserAttributes: attrs, Enabled: true, UserStatus: u.status,
		UserCreateDate: epoch(u.created), UserLastModifiedDate: epoch(u.modified),
	}
}

// epoch renders a time as the JSON protocol's timestamps: seconds since the epoch.
func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// apiError is an error in the AWS JSON protocol's shape: HTTP 400 with
// {"__type": code, "message": ...} and the x-amzn-ErrorType header, from which the SDK builds
// the typed error (e.g. *types.UsernameExistsException).
type apiError struct {
	status  int
	code    string
	message string
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Errortype", e.code+":")
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": e.code, "message": e.message})
}

func invalidParameter(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidParameterException", message: msg}
}

func userNotFound() *apiError {
	return &apiError{status: http.StatusBadRequest, code: "UserNotFoundException", message: "User does not exist."}
}

func internalError(err error) *apiError {
	return &apiError{status: http.StatusInternalServerError, code: "InternalErrorException", message: err.Error()}
}

// newSub is a random version-4 UUID, the shape of a Cognito sub.
func newSub() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
