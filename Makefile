# sop-pme: the two commands of the README are `make demo` and `make test`.
GO ?= go
CARGO_TARGET_DIR ?= $(HOME)/.cache/sop-pme/cargo-target
export CARGO_TARGET_DIR

# go.work makes the three modules (the library at the root, ./duckdb and
# ./cmd/sop-pme) one workspace, for editors and for go commands run from the
# root. make builds and tests each module with its own go.mod instead
# (GOWORK=off): the versions its users get, and ./... of the root is the
# library alone. vet also checks that the workspace builds.
export GOWORK := off

# Every go.mod (and go.work) names a toolchain, go1.26.11: a Go 1.26 whose
# standard library has the security fixes govulncheck asks for (our code
# reaches vulnerabilities of go1.26.8's crypto/tls, crypto/x509, net/http,
# net/textproto and html/template). GOTOOLCHAIN=auto has the go
# command switch to it (downloaded once through the module proxy), also
# where the installed Go's go.env says local. GOTOOLCHAIN=local make test
# builds with the installed Go as it is (and make lint then fails on its
# vulnerabilities, if it has them).
export GOTOOLCHAIN ?= auto

.DEFAULT_GOAL := test
.PHONY: demo test vet lint staticcheck vulncheck unit purego interop sql cli cli-iroh s3 servers bench bench-seal bench-iroh-cli fuzz corpus

# Writes a sample table into ./demo-store and prints its storage_id, size,
# unpadded size and key_ref (never the DEK), then reads it back. Its KEK and
# keyring are the user's defaults (the user configuration directory) unless
# SOP_PME_KEK_FILE=DIR/kek says otherwise: SOP_PME_KEK_FILE=/tmp/d/kek make demo.
demo:
	$(GO) build -C cmd/sop-pme -buildvcs=auto -o $(CURDIR)/bin/sop-pme .
	./bin/sop-pme demo --store ./demo-store

# go vet, staticcheck and govulncheck, the unit tests with -race (fuzz
# targets run their seed corpora), the pure-Go build, DuckDB interop, SQL
# through the verified reader (both in the duckdb module), the command line,
# the S3 store (module blobs/s3, against versitygw), the iroh-blobs
# binding, and the command line's iroh parts (serve, fetch, iroh://).
test: vet lint unit purego interop sql cli s3 test-iroh cli-iroh

vet:
	$(GO) vet ./...
	$(GO) vet -tags iroh ./blobs/iroh/...
	cd duckdb && $(GO) vet ./...
	GOWORK= $(GO) vet -tags duckdb ./... ./blobs/s3/... ./duckdb/... ./cmd/sop-pme/...

# staticcheck and govulncheck, on every module. The tools, and the copy of
# the Go vulnerability database govulncheck reads, are built on first use
# into $(TOOLCACHE), one directory a version (a new version is a new
# directory; delete the old ones by hand).
TOOLCACHE ?= $(HOME)/.cache/sop-pme
# staticcheck 2026.2.2, for Go 1.26.
STATICCHECK_VERSION := v0.8.2
GOVULNCHECK_VERSION := v1.9.0
# The vulnerability database is the module golang.org/x/vulndb (its
# data/osv holds every report), fetched through the module proxy and
# indexed here: vuln.go.dev, which govulncheck reads by default, need not
# be reachable. A pseudo-version pins it, so a run reads the database as
# of that commit; to bump it, put here what
#   GOWORK=off go list -m golang.org/x/vulndb@latest
# prints (the next make lint builds that version's database, about a minute).
VULNDB_VERSION := v0.0.0-20261105234957-e22db6528018
STATICCHECK := $(TOOLCACHE)/bin/staticcheck-$(STATICCHECK_VERSION)/staticcheck
GOVULNCHECK := $(TOOLCACHE)/bin/govulncheck-$(GOVULNCHECK_VERSION)/govulncheck
VULNDB := $(TOOLCACHE)/vulndb-$(VULNDB_VERSION)

lint: staticcheck vulncheck

# Every module in every build of it: staticcheck -matrix checks each
# configuration and merges the results, so that a name only one build uses
# (the iroh tag's, the sql command's under duckdb) counts as used. The
# command line ships without cgo (pure) and with DuckDB (duckdb).
staticcheck: $(STATICCHECK)
	printf 'lib:\niroh: -tags=iroh\n' | $(STATICCHECK) -matrix ./...
	cd duckdb && $(STATICCHECK) ./...
	cd blobs/s3 && $(STATICCHECK) ./...
	cd cmd/sop-pme && printf 'pure: CGO_ENABLED=0\nduckdb: -tags=duckdb\niroh: -tags=iroh,duckdb\n' | $(STATICCHECK) -matrix ./...

# govulncheck fails on a vulnerability our code reaches (not on one in a
# package or module it only requires). Each module once, with its build
# tags: a tag only adds files (iroh: package blobs/iroh's binding; duckdb:
# the sql command, whose stand-in in the build without it returns an
# error), so the tagged build reaches all the untagged one does.
vulncheck: $(GOVULNCHECK) $(VULNDB)/index/db.json
	$(GOVULNCHECK) -db file://$(VULNDB) -tags iroh ./...
	cd duckdb && $(GOVULNCHECK) -db file://$(VULNDB) ./...
	cd blobs/s3 && $(GOVULNCHECK) -db file://$(VULNDB) ./...
	cd cmd/sop-pme && $(GOVULNCHECK) -db file://$(VULNDB) -tags iroh,duckdb ./...

$(STATICCHECK):
	GOBIN=$(@D) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(GOVULNCHECK):
	GOBIN=$(@D) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)

# indexdb (the vulndb module's own tool) writes the database govulncheck
# reads from the reports; built in a temporary directory, then renamed, so
# an interrupted build leaves no half a database.
$(VULNDB)/index/db.json:
	$(GO) mod download golang.org/x/vulndb@$(VULNDB_VERSION)
	rm -rf $(VULNDB).tmp
	$(GO) run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) \
		-vulns "$$($(GO) env GOMODCACHE)/golang.org/x/vulndb@$(VULNDB_VERSION)/data/osv" -out $(VULNDB).tmp
	rm -rf $(VULNDB)
	mv $(VULNDB).tmp $(VULNDB)

# -timeout 30m: one package's tests under -race take up to 6 min on two
# shared cores; go test's default (10 min a package) left too little room.
unit:
	$(GO) test -race -count=1 -timeout 30m ./...

# The library builds and tests without cgo and without Rust.
purego:
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./...

# The duckdb module (DuckDB is a cgo dependency, so it is a module of its
# own): the interop suite against DuckDB 1.5.6 (duckdb/interop, and the
# helpers its tests share with sopsql's, duckdb/internal), and package
# sopsql, with which DuckDB queries objects through the verified reader.
interop:
	cd duckdb && $(GO) test -count=1 ./interop/... ./internal/...

sql:
	cd duckdb && $(GO) test -count=1 ./sopsql/...

# The sop-pme command: a module of its own (cobra, progress bars, the KMS
# drivers of gocloud.dev/secrets), tested end to end through its built
# binary, and built without cgo. Its sql command needs -tags duckdb (DuckDB,
# cgo): the untagged run tests that the pure-Go build has none and links no
# DuckDB; the tagged run builds sop-pme with DuckDB once and runs the SQL
# tests through it (the others test the untagged binary, already run above),
# and tests the printer of the rows (internal/sqlout, tagged too).
# The cgo-less build links the command and writes it nowhere: go build of
# several packages (./...) discards what it builds, so no -o is needed (and
# none points at a system path).
cli:
	cd cmd/sop-pme && $(GO) vet ./...
	cd cmd/sop-pme && $(GO) test -race -count=1 ./...
	cd cmd/sop-pme && CGO_ENABLED=0 $(GO) build ./...
	cd cmd/sop-pme && $(GO) vet -tags duckdb ./...
	cd cmd/sop-pme && $(GO) test -tags duckdb -count=1 -run '^TestSQL' ./...
	cd cmd/sop-pme && $(GO) test -tags duckdb -count=1 ./internal/sqlout/...

# The command line's iroh parts (build tag iroh: serve, fetch, iroh://
# stores), linked with the Rust library (iroh-lib): two nodes on 127.0.0.1
# (TestIroh*), sendme 0.37.1 as an independent peer (TestIrohSendme, in a
# network namespace with only loopback; .ci/install-sendme builds it once
# into $(TOOLCACHE)/bin; without it the test skips, except under CI=true),
# serve --relay through iroh-relay 1.4.1 on 127.0.0.1 (TestIrohRelay;
# .ci/install-relay builds it once, as sendme), serve --discovery with
# iroh-dns-server 1.4.1 on 127.0.0.1 (TestIrohDiscovery;
# .ci/install-dns-server builds it once), and sql over another node's
# table with DuckDB (-tags 'iroh duckdb').
# -count=1: the go command does not hash the static library.
SENDME ?= $(TOOLCACHE)/bin/sendme-0.37.1/bin/sendme
IROH_RELAY ?= $(TOOLCACHE)/bin/iroh-relay-1.4.1/bin/iroh-relay
IROH_DNS_SERVER ?= $(TOOLCACHE)/bin/iroh-dns-server-1.4.1/bin/iroh-dns-server
cli-iroh: iroh-lib
	cd cmd/sop-pme && $(GO) vet -tags iroh ./...
	cd cmd/sop-pme && SOP_PME_SENDME=$(SENDME) SOP_PME_IROH_RELAY=$(IROH_RELAY) SOP_PME_IROH_DNS_SERVER=$(IROH_DNS_SERVER) $(GO) test -count=1 -tags iroh -run '^TestIroh' .
	cd cmd/sop-pme && $(GO) test -count=1 -tags 'iroh duckdb' -run '^TestIrohSQL' .

# The figures of serving and fetching over iroh, on 127.0.0.1 (not part of
# make test): a one-column projection of a ~100 MB object from a serving
# node against the same from the local store (time; bytes received, at most
# 1.1 times the bytes the local read verifies), and sop-pme fetch of a
# 1 GiB object against cp of its file (cmd/sop-pme/iroh_bench_test.go;
# SOP_PME_BENCH_MB and SOP_PME_BENCH_FETCH_MB change the sizes). Needs
# about 5 GB in the temporary directory.
bench-iroh-cli: iroh-lib
	cd cmd/sop-pme && $(GO) test -count=1 -tags iroh -run '^$$' -bench '^BenchmarkIroh' -benchtime 3x -timeout 60m .

# The S3 store, a module of its own (the AWS SDK), tested against a real
# S3 server: versitygw, which each test starts on 127.0.0.1 with a posix
# directory of its own. make servers (.ci/install-servers) builds it once
# into $(TOOLCACHE)/bin; without it the tests skip, except under CI=true.
VERSITYGW ?= $(TOOLCACHE)/bin/versitygw-v1.8.0/versitygw
servers:
	.ci/install-servers

s3:
	cd blobs/s3 && $(GO) vet ./...
	cd blobs/s3 && SOP_PME_VERSITYGW=$(VERSITYGW) $(GO) test -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Sealing a large file (TPC-H sf 5 lineitem, made by tpchgen-cli, or
# SEAL_FILE) into blobs.Dir against dd conv=fsync of the same file, side by
# side, in a temporary directory (see bench/seal-large.sh). Not part of
# make test.
SEAL_FILE ?=
bench-seal:
	sh bench/seal-large.sh $(SEAL_FILE)

# Apache parquet-testing, the corpus arrow-go, parquet-rs and Arrow C++ test
# against, is not part of this repository (nor of make test): fetch a copy,
#   git clone https://github.com/apache/parquet-testing /some/dir
#   make corpus PARQUET_TESTING=/some/dir
# Every file goes through sop-pme import --assign-field-ids, check, verify
# and export, compared with pyarrow's read (duckdb/interop/corpus/run.py;
# needs python3 with pyarrow); then every file is sealed and DuckDB 1.5.6
# reads each object with its DEK, compared with its read of the file
# (duckdb/interop/corpus/duckcheck). One JSON line a file, then the counts.
PARQUET_TESTING ?=
corpus:
	@test -d "$(PARQUET_TESTING)" || { echo "usage: make corpus PARQUET_TESTING=/path/to/parquet-testing"; exit 2; }
	$(GO) build -C cmd/sop-pme -o $(CURDIR)/bin/sop-pme .
	work=$$(mktemp -d) && trap 'rm -rf "$$work"' EXIT && \
		python3 duckdb/interop/corpus/run.py $(CURDIR)/bin/sop-pme "$(PARQUET_TESTING)" "$$work"
	cd duckdb && $(GO) run ./interop/corpus/duckcheck "$(PARQUET_TESTING)"

# make fuzz fuzzes every fuzz target of the three modules for FUZZTIME
# each, one after the other: the list is what go test -list '^Fuzz' finds
# in each module (make -n fuzz prints it, one go test a target), so a new
# target is fuzzed without being listed here. (It lists the untagged
# builds: a fuzz target in a file under the iroh or duckdb tag would not
# be found; there is none.) FUZZMINIMIZETIME caps the minimization of each
# new input by executions, not time: the inputs of the reader's, pme's,
# the sealers' and the writer's targets are objects of kilobytes, each
# execution a full open, and a time cap spent on minimizing them is time
# not spent fuzzing. A crasher worth shrinking further can be minimized
# on its own: go test -run '^$$' -fuzz '^NAME$$' -fuzzminimizetime 60s PKG.
FUZZTIME ?= 30s
FUZZMINIMIZETIME ?= 100x
FUZZMODULES := . duckdb cmd/sop-pme
ifneq ($(filter fuzz,$(MAKECMDGOALS)),)
# MODULE:PACKAGE:NAME, one a target.
FUZZ_TARGETS := $(shell for m in $(FUZZMODULES); do \
	out=$$($(GO) test -C $$m -list '^Fuzz' ./...) || exit 1; \
	printf '%s\n' "$$out" | awk -v m=$$m '/^Fuzz[A-Za-z0-9_]*$$/ { n[++c] = $$1; next } \
		$$1 == "ok" { for (i = 1; i <= c; i++) print m ":" $$2 ":" n[i] } { c = 0 }'; \
	done)
ifneq ($(.SHELLSTATUS),0)
$(error make fuzz: go test -list '^Fuzz' failed in one of $(FUZZMODULES))
endif
ifeq ($(FUZZ_TARGETS),)
$(error make fuzz: go test -list '^Fuzz' found no fuzz target)
endif
endif
define fuzz_newline


endef
fuzz_field = $(word $2,$(subst :, ,$1))
fuzz:
	$(foreach t,$(FUZZ_TARGETS),$(GO) test -C $(call fuzz_field,$t,1) -run '^$$' -fuzz '^$(call fuzz_field,$t,3)$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $(call fuzz_field,$t,2)$(fuzz_newline))

include blobs/iroh/iroh.mk
include bench/tpch/tpch.mk
