# blobs/iroh/iroh.mk: builds the Rust library of package blobs/iroh and runs
# its tests (build tag iroh). Included by the top-level Makefile, or run on its
# own from any directory:
#
#	make -f blobs/iroh/iroh.mk test-iroh
#
# Targets:
#	iroh-lib   cargo build --release (--locked) of blobs/iroh/ffi, copying
#	           libsop_iroh.a to blobs/iroh/lib/, where the cgo preamble
#	           links it. The copy loses its LLVM bitcode sections
#	           (.llvmbc, .llvmcmd: 283 objects of Rust's prebuilt standard
#	           library and the crates carry them, for link-time
#	           optimization we do not use): since go1.26.11 the go command
#	           refuses to link an archive that holds them ("disallowed LTO
#	           section"). The machine code is untouched.
#	test-iroh  iroh-lib, then go test -race -tags iroh on the package, built
#	           with GOEXPERIMENT=cgocheck2
#	bench-iroh iroh-lib, then the package's benchmarks
#	clean-iroh removes blobs/iroh/lib/ (not the cargo target directory)
#
# The cargo target directory is a cache outside the work tree, kept between
# builds: CARGO_TARGET_DIR (default ~/.cache/sop-pme/cargo-target).

# The directory of this file, taken before any other include changes
# MAKEFILE_LIST.
IROH_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
_iroh_standalone := $(filter 1,$(words $(MAKEFILE_LIST)))
_iroh_prev_goal := $(.DEFAULT_GOAL)

CARGO ?= cargo
GO ?= go
OBJCOPY ?= objcopy
CARGO_TARGET_DIR ?= $(HOME)/.cache/sop-pme/cargo-target
IROH_GOTESTFLAGS ?=
# cgocheck2 makes the Go runtime check every pointer write into memory that
# is not Go's, so a Go pointer kept in the Rust library's memory (against
# cgo's pointer rules) crashes the tests. It combines with -race, so the
# tests run once with both: in one run of the package the two cost 13.0 s
# against 12.8 s for -race alone. The price is one build of the standard
# library and the package's dependencies with the experiment (about 3 min of
# wall time on 2 shared cores, once per build cache). An experiment already in
# GOEXPERIMENT is kept.
_iroh_comma := ,
IROH_GOEXPERIMENT := $(if $(GOEXPERIMENT),$(GOEXPERIMENT)$(_iroh_comma))cgocheck2

IROH_FFI := $(IROH_DIR)/ffi
IROH_LIB := $(IROH_DIR)/lib/libsop_iroh.a
IROH_LIB_SRC := $(IROH_FFI)/Cargo.toml $(wildcard $(IROH_FFI)/Cargo.lock) \
	$(IROH_FFI)/rust-toolchain.toml $(wildcard $(IROH_FFI)/src/*.rs)
# --locked once Cargo.lock exists, so the build uses exactly the recorded
# versions.
IROH_LOCKED := $(if $(wildcard $(IROH_FFI)/Cargo.lock),--locked,)

.PHONY: iroh-lib test-iroh bench-iroh clean-iroh

iroh-lib: $(IROH_LIB)

$(IROH_LIB): $(IROH_LIB_SRC)
	cd $(IROH_FFI) && CARGO_TARGET_DIR='$(CARGO_TARGET_DIR)' $(CARGO) build --release $(IROH_LOCKED)
	mkdir -p $(IROH_DIR)/lib
	cp '$(CARGO_TARGET_DIR)/release/libsop_iroh.a' $(IROH_LIB).tmp
	$(OBJCOPY) --remove-section=.llvmbc --remove-section=.llvmcmd $(IROH_LIB).tmp
	mv $(IROH_LIB).tmp $(IROH_LIB)

# -count=1: the go command does not hash the contents of the static library
# named in the cgo LDFLAGS, so a cached test result could predate it.
# TestBuiltWithCgocheck2 fails under CI=true if the experiment is missing.
test-iroh: iroh-lib
	cd $(IROH_DIR) && GOEXPERIMENT='$(IROH_GOEXPERIMENT)' $(GO) test -count=1 -race -tags iroh $(IROH_GOTESTFLAGS) ./...

bench-iroh: iroh-lib
	cd $(IROH_DIR) && $(GO) test -count=1 -tags iroh -run '^$$' -bench . -benchtime 5x $(IROH_GOTESTFLAGS) ./...

clean-iroh:
	rm -rf $(IROH_DIR)/lib

# Run on its own, the default goal is test-iroh; included, this file leaves
# the including Makefile's default goal alone.
ifeq ($(_iroh_standalone),1)
.DEFAULT_GOAL := test-iroh
else
.DEFAULT_GOAL := $(_iroh_prev_goal)
endif
