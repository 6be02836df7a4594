# toolgate: `make test` installs what the tests need, then runs them all.
GO ?= go
# The release tools (ko, helm, nfpm) are pinned in tools/go.mod, a module of
# its own: `$(TOOL) helm version` runs the pinned helm, fetched only from the
# Go module proxy.
TOOL := $(GO) tool -modfile=tools/go.mod

.PHONY: test deps build vet cross fuzz bench image package

# -buildvcs=auto records the commit, by which toolgate knows that the
# toolgate-sandbox beside it is of the same build.
build:
	$(GO) build -buildvcs=auto -o bin/ ./cmd/toolgate ./cmd/toolgate-agent ./cmd/toolgate-sandbox

# Everything the test suite needs on a fresh Debian machine.
deps:
	./scripts/test-deps.sh

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) -C tools vet ./...

# Every package, its tests included, type-checks on each platform toolgate
# ships for (vet compiles what a build compiles, and the test files too).
# linux/amd64 is `vet` above.
PLATFORMS := linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
cross:
	@for p in $(PLATFORMS); do echo "go vet ./... for $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./... || exit 1; done

# The patched go-sdk in third_party is a module of its own: its tests (the
# patches' differential tests among them) run beside ours; so is tools/, whose
# tests build the images and packages (make image, make package) and check them.
test: deps vet cross
	$(GO) test -race -count=1 -timeout 20m ./...
	cd third_party/go-sdk && $(GO) test -count=1 . ./internal/... ./mcp/
	GO=$(GO) $(GO) -C tools test -count=1 -timeout 30m ./...

# OCI image layouts of toolgate (the program on CA certificates and time
# zones) and toolgate-runner (with a shell, coreutils, git and Python from
# Debian's packages, deploy/image/toolgate-runner.packages) for linux amd64
# and arm64 under dist/image/, each with an SBOM beside it: no Docker daemon
# and no container registry, reproducible (tools/release).
image:
	GO=$(GO) $(GO) -C tools run ./release image

# dist/: toolgate_VERSION_OS_ARCH.tar.gz (linux, darwin) and .zip (windows)
# for amd64 and arm64, .deb and .rpm (packaging/nfpm.yaml), server.json (its
# image: IMAGE, where the release pushes the lean image) and
# toolgate_VERSION_checksums.txt.
IMAGE ?= toolgate/toolgate
package:
	GO=$(GO) $(GO) -C tools run ./release package -image $(IMAGE)

# A short run of every fuzz target (they also run their seed corpus in `make test`).
fuzz:
	./scripts/fuzz.sh 20s

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...
