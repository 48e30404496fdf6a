# hermes build targets. `make install` puts the binaries in $(PREFIX)/bin, with
# hermes-agent (Hermes Agent's entry name) and hermes-acp (the editors' ACP
# entry, runs `hermes acp`) linked to it.
PREFIX ?= /usr/local
GO ?= go

.PHONY: build install test demo bench vet

# hermes and hermes-box-init (every box's PID 1, found beside hermes) are
# built together into one directory.
build:
	@echo "building bin/hermes and bin/hermes-box-init (the first build compiles every dependency: a few minutes, silent; later ones take seconds)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o bin/ ./cmd/hermes ./cmd/hermes-box-init

install:
	@echo "building $(PREFIX)/bin/hermes and hermes-box-init (the first build compiles every dependency: a few minutes, silent; later ones take seconds)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(PREFIX)/bin/ ./cmd/hermes ./cmd/hermes-box-init
	ln -sf hermes $(PREFIX)/bin/hermes-agent
	ln -sf hermes $(PREFIX)/bin/hermes-acp

test:
	$(GO) test ./...

vet:
	$(GO) vet ./...

# The offline incident-triage example (scripted model, real tools).
demo: build
	cd examples/incident-triage && ../../bin/hermes chat -Q --yolo --ignore-user-config \
	  --provider replay --replay model.jsonl \
	  -q "Study runbook.md, apply it to incidents/first.json and write reports/incident.md"

bench:
	bash bench/run.sh
