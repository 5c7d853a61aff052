package awsgate

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Staging labels Secrets Manager moves between a secret's versions.
const (
	stageCurrent  = "AWSCURRENT"
	stagePrevious = "AWSPREVIOUS"
)

// secretNotFound is Secrets Manager's answer for a secret id that names no secret.
func secretNotFound() *apiError {
	return serviceError(http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
}

// secretStore is an in-memory Secrets Manager: secrets by name, each with its versions and
// the staging labels that point at them.
type secretStore struct {
	region, account string
	now             func() time.Time

	mu     sync.Mutex
	byName map[string]*secret
	byARN  map[string]*secret
}

type secret struct {
	name, arn string
	versions  []*secretVersion
	// stages maps a staging label to the id of the version it is on.
	stages map[string]string
}

type secretVersion struct {
	id           string
	secretString *string
	// secretBinary is the base64 text the wire carries; the gate never decodes it.
	secretBinary *string
	created      time.Time
}

func newSecretStore(region, account string, now func() time.Time) *secretStore {
	return &secretStore{region: region, account: account, now: now,
		byName: map[string]*secret{}, byARN: map[string]*secret{}}
}

var secretNamePattern = regexp.MustCompile(`^[A-Za-z0-9/_+=.@-]{1,512}$`)

// create adds a secret with value as its AWSCURRENT version and returns its ARN.
func (s *secretStore) create(name, value string) (string, error) {
	if !secretNamePattern.MatchString(name) {
		return "", fmt.Errorf("secret name %q: want 1 to 512 of A-Z a-z 0-9 / _ + = . @ -", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[name]; ok {
		return "", fmt.Errorf("secret %q already exists", name)
	}
	sec := &secret{
		name:   name,
		arn:    fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-%s", s.region, s.account, name, randomSuffix()),
		stages: map[string]string{},
	}
	v := &secretVersion{id: newVersionID(), secretString: &value, created: s.now()}
	sec.versions = append(sec.versions, v)
	sec.stages[stageCurrent] = v.id
	s.byName[name] = sec
	s.byARN[sec.arn] = sec
	return sec.arn, nil
}

// lookup finds a secret as Secrets Manager resolves a SecretId: by full ARN, by name, or by
// the ARN without its six-character suffix.
func (s *secretStore) lookup(secretID string) (*secret, bool) {
	if sec, ok := s.byARN[secretID]; ok {
		return sec, true
	}
	if name, ok := strings.CutPrefix(secretID, fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:", s.region, s.account)); ok {
		sec, ok := s.byName[name]
		return sec, ok
	}
	sec, ok := s.byName[secretID]
	return sec, ok
}

// arnOf is the full ARN of the secret secretID names.
func (s *secretStore) arnOf(secretID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec, ok := s.lookup(secretID)
	if !ok {
		return "", false
	}
	return sec.arn, true
}

// stagesOf lists the labels on version id, AWSCURRENT and AWSPREVIOUS first.
func (sec *secret) stagesOf(id string) []string {
	var out []string
	for label, vid := range sec.stages {
		if vid == id {
			out = append(out, label)
		}
	}
	rank := func(label string) int {
		switch label {
		case stageCurrent:
			return 0
		case stagePrevious:
			return 1
		}
		return 2
	}
	slices.SortFunc(out, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return out
}

func (sec *secret) version(id string) *secretVersion {
	for _, v := range sec.versions {
		if v.id == id {
			return v
		}
	}
	return nil
}

type getSecretValueInput struct {
	SecretID     string `json:"SecretId"`
	VersionID    string `json:"VersionId"`
	VersionStage string `json:"VersionStage"`
}

type getSecretValueOutput struct {
	ARN           string   `json:"ARN"`
	Name          string   `json:"Name"`
	VersionID     string   `json:"VersionId"`
	SecretString  *string  `json:"SecretString,omitempty"`
	SecretBinary  *string  `json:"SecretBinary,omitempty"`
	VersionStages []string `json:"VersionStages"`
	// CreatedDate is epoch seconds, as AWS's JSON protocols carry timestamps.
	CreatedDate float64 `json:"CreatedDate"`
}

func (s *secretStore) getSecretValue(body []byte) (any, *apiError) {
	var in getSecretValueInput
	if err := decodeBody(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec, ok := s.lookup(in.SecretID)
	if !ok {
		return nil, secretNotFound()
	}
	id := in.VersionID
	if id == "" {
		stage := in.VersionStage
		if stage == "" {
			stage = stageCurrent
		}
		if id, ok = sec.stages[stage]; !ok {
			return nil, serviceError(http.StatusBadRequest, "ResourceNotFoundException",
				"Secrets Manager can't find the specified secret value for staging label: %s", stage)
		}
	}
	v := sec.version(id)
	if v == nil || (in.VersionStage != "" && sec.stages[in.VersionStage] != id) {
		return nil, serviceError(http.StatusBadRequest, "ResourceNotFoundException",
			"Secrets Manager can't find the specified secret value for VersionId: %s", id)
	}
	return getSecretValueOutput{
		ARN: sec.arn, Name: sec.name, VersionID: v.id,
		SecretString: v.secretString, SecretBinary: v.secretBinary,
		VersionStages: sec.stagesOf(v.id), CreatedDate: epochSeconds(v.created),
	}, nil
}

type putSecretValueInput struct {
	SecretID           string   `json:"SecretId"`
	ClientRequestToken string   `json:"ClientRequestToken"`
	SecretString       *string  `json:"SecretString"`
	SecretBinary       *string  `json:"SecretBinary"`
	VersionStages      []string `json:"VersionStages"`
}

type putSecretValueOutput struct {
	ARN           string   `json:"ARN"`
	Name          string   `json:"Name"`
	VersionID     string   `json:"VersionId"`
	VersionStages []string `json:"VersionStages"`
}

// putSecretValue adds a version and moves the labels it names (AWSCURRENT by default) onto it;
// the version AWSCURRENT leaves becomes AWSPREVIOUS, as on AWS. A repeated ClientRequestToken
// with the same value is the same version again.
func (s *secretStore) putSecretValue(body []byte) (any, *apiError) {
	var in putSecretValueInput
	if err := decodeBody(body, &in); err != nil {
		return nil, err
	}
	if (in.SecretString == nil) == (in.SecretBinary == nil) {
		return nil, serviceError(http.StatusBadRequest, "InvalidParameterException",
			"You must provide either SecretString or SecretBinary, and not both.")
	}
	stages := in.VersionStages
	if len(stages) == 0 {
		stages = []string{stageCurrent}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sec, ok := s.lookup(in.SecretID)
	if !ok {
		return nil, secretNotFound()
	}
	if in.ClientRequestToken != "" {
		if v := sec.version(in.ClientRequestToken); v != nil {
			if !sameValue(v, in.SecretString, in.SecretBinary) {
				return nil, serviceError(http.StatusBadRequest, "ResourceExistsException",
					"You can't modify an existing version, you can only create a new version.")
			}
			return putSecretValueOutput{ARN: sec.arn, Name: sec.name, VersionID: v.id, VersionStages: sec.stagesOf(v.id)}, nil
		}
	}
	id := in.ClientRequestToken
	if id == "" {
		id = newVersionID()
	}
	v := &secretVersion{id: id, secretString: in.SecretString, secretBinary: in.SecretBinary, created: s.now()}
	sec.versions = append(sec.versions, v)
	for _, label := range stages {
		if label == stageCurrent {
			if old, ok := sec.stages[stageCurrent]; ok && old != id {
				sec.stages[stagePrevious] = old
			}
		}
		sec.stages[label] = id
	}
	return putSecretValueOutput{ARN: sec.arn, Name: sec.name, VersionID: v.id, VersionStages: sec.stagesOf(v.id)}, nil
}

func sameValue(v *secretVersion, secretString, secretBinary *string) bool {
	eq := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return eq(v.secretString, secretString) && eq(v.secretBinary, secretBinary)
}

func epochSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1e3 }

const suffixAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomSuffix is the six characters Secrets Manager appends to a secret's name in its ARN.
func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes the program instead.
	for i := range b {
		b[i] = suffixAlphabet[int(b[i])%len(suffixAlphabet)]
	}
	return string(b[:])
}

// newVersionID is a random UUID, the shape of the version ids Secrets Manager makes.
func newVersionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
