# The two commands: `make bench` and `make test`. Both set up what they need first (`make deps`).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

PYTHON ?= python3
VENV := .venv
HARNESS := $(VENV)/bin/harness
UV := $(VENV)/bin/uv pip install --quiet --python $(VENV)/bin/python
TIMERS := workloads/timers
POOLS := workloads/pools
TOKENBUCKET := workloads/tokenbucket
# the real vitess smartconnpool: a module of its own (see workloads/pools/suite.toml)
POOLS_VITESS := workloads/pools/vitess
LETTUCE := workloads/lettuce
# the Rust suites' shared command line (tokenbucket and io use it), a workspace of its own
SUITE_CLI := workloads/suite_cli
IO := workloads/io
# The lettuce suite's Maven repository (its suite.toml build uses the same path).
M2_REPO := $${XDG_CACHE_HOME:-$$HOME/.cache}/harness/m2
# Flame graph tools from crates.io, pinned, installed into the repo (not the user's ~/.cargo).
INFERNO_VERSION := 0.12.8
TOOLS := .tools
# tokenbucket, io and suite_cli build into one target directory, workloads/target (their
# .cargo/config.toml), so that what they share is built once.
SHARED_TARGET := workloads/target

SUITES ?=
QUICK ?=
suites_flag = $(if $(SUITES),--suites $(SUITES))

.PHONY: deps system-deps python-env inferno lettuce-deps build bpf bench nightly dashboard \
	bench-history bench-startup test lint test-rust test-loom test-go test-python lock schema clean

## deps: Debian packages (as root), the pinned Python environment, inferno, the eBPF
## collectors, every workload built
deps: system-deps python-env inferno bpf lettuce-deps build

system-deps:
	@scripts/install-system-deps.sh

# The harness's bytecode, kept current: where PYTHONDONTWRITEBYTECODE is set, every harness
# call would compile the package again (a quarter of a second each, hundreds in make test).
python-env: $(VENV)/.installed
	@$(VENV)/bin/python -m compileall -q harness

# pip installs only uv, which installs the lock: 17 s where pip took a minute.
$(VENV)/.installed: requirements-bootstrap.lock requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --require-hashes \
		-r requirements-bootstrap.lock
	$(UV) --require-hashes --compile-bytecode -r requirements.lock
	$(UV) --no-deps --no-build-isolation -e .
	scripts/check-venv-access.sh $(VENV)
	touch $@

inferno: $(TOOLS)/.inferno-$(INFERNO_VERSION)

# Its build goes to the user's cache, not the clone: a second clone of the repo on this
# machine (CI's) installs it in seconds instead of compiling it again.
$(TOOLS)/.inferno-$(INFERNO_VERSION):
	CARGO_TARGET_DIR=$${XDG_CACHE_HOME:-$$HOME/.cache}/harness/inferno-$(INFERNO_VERSION) \
		cargo install --quiet --locked inferno --version $(INFERNO_VERSION) --root $(TOOLS)
	touch $@

# The lettuce suite's Maven dependencies and plugins, fetched by an online build into the
# harness's repository in the user's cache (a second clone, CI's, finds them there), so that
# its suite.toml build runs offline (-o). Without Java or Maven the suite is skipped (its
# suite.toml `requires`).
lettuce-deps:
	@if command -v mvn >/dev/null && command -v java >/dev/null; then \
		cd $(LETTUCE) && mvn -B -q -Dmaven.repo.local=$(M2_REPO) package; \
	else echo "deps: no java/mvn: the lettuce suite will be skipped" >&2; fi

build: python-env
	$(HARNESS) build $(suites_flag)

# A machine that can load BPF (kernel BTF, and root or CAP_BPF or CAP_SYS_ADMIN) needs the
# collectors: one that does not build there fails deps, the compiler's first error last. Only a
# machine that could not load them anyway goes on without probes (each bench says so). BPF_DIR:
# another copy of bpf/ (the tests build a broken one).
BPF_DIR ?= bpf
bpf:
	@log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	if $(MAKE) --no-print-directory -C $(BPF_DIR) 2>&1 | tee "$$log"; then exit 0; fi; \
	first=$$(grep -m1 -E 'error|Error' "$$log" || tail -n1 "$$log"); \
	caps=$$(awk '/^CapEff:/ {print $$2}' /proc/self/status); \
	if [ "$${REQUIRE_BPF:-0}" = 1 ] || { [ -e /sys/kernel/btf/vmlinux ] && \
		(( (0x$${caps:-0} >> 39 & 1) || (0x$${caps:-0} >> 21 & 1) )); }; then \
		echo "deps: the eBPF collectors did not build, and this machine can load them: $$first" >&2; \
		exit 1; fi; \
	echo "deps: the eBPF collectors did not build; this machine cannot load them anyway (no kernel BTF, or no CAP_BPF): probes will be unavailable" >&2

## bench: the default matrix of every suite (SUITES=a,b to choose, QUICK=1 for short cells),
## then its runs imported into the history (results/history.sqlite, or $$HARNESS_DB): a failed
## import fails it, a run.json the import cannot read is named but does not
bench: deps
	status=0; $(HARNESS) bench $(suites_flag) $(if $(QUICK),--quick) || status=$$?; \
	$(HARNESS) history import || status=$$(( status ? status : $$? )); exit $$status

## nightly: bench, import, the confirming runs of the night's provisional changes, the
## dashboard, then the regressions (exit 1 while one is open); scripts/nightly wraps it for
## cron or a systemd timer (lock, log file)
nightly:
	status=0; $(MAKE) --no-print-directory bench || status=$$?; \
	$(HARNESS) history confirm || status=$$(( status ? status : $$? )); \
	$(HARNESS) dashboard || status=$$(( status ? status : $$? )); \
	$(HARNESS) history regressions || status=$$(( status ? status : $$? )); exit $$status

## dashboard: the static site of the history (results/dashboard/index.html)
dashboard: python-env
	$(HARNESS) dashboard

## bench-history: the history's scale benchmark (synthetic year of nights; figures on stdout)
bench-history: python-env
	$(VENV)/bin/python scripts/bench-history

## bench-startup: the CLI's start-up times (--help, list, run) beside a bare Python start
bench-startup: python-env
	$(VENV)/bin/python scripts/bench-startup

## test: lint, then every test (cargo test, loom, go test -race, pytest)
test: deps lint test-rust test-loom test-go test-python

lint: python-env
	cd $(TIMERS) && cargo fmt --all --check
	cd $(TIMERS) && cargo fmt --manifest-path legacy/Cargo.toml --check
	cd $(TIMERS) && cargo fmt --manifest-path sharded/Cargo.toml --check
	cd $(TIMERS) && cargo clippy --locked --workspace --all-targets -- -D warnings
	cd $(TIMERS) && cargo clippy --locked --manifest-path legacy/Cargo.toml -- -D warnings
	cd $(TIMERS) && cargo clippy --locked --manifest-path sharded/Cargo.toml -- -D warnings
	cd $(TOKENBUCKET) && cargo fmt --all --check
	cd $(TOKENBUCKET) && cargo clippy --locked --workspace --all-targets -- -D warnings
	cd $(SUITE_CLI) && cargo fmt --all --check
	cd $(SUITE_CLI) && cargo clippy --locked --workspace --all-targets -- -D warnings
	cd $(IO) && cargo fmt --all --check
	cd $(IO) && cargo clippy --locked --workspace --all-targets -- -D warnings
	cd $(POOLS) && test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above" >&2; exit 1; }
	cd $(POOLS) && go vet ./...
	cd $(POOLS_VITESS) && go vet -tags goexperiment.swissmap ./...
	$(VENV)/bin/ruff check harness tests workloads/fio
	$(VENV)/bin/ruff format --check harness tests workloads/fio
	$(VENV)/bin/mypy

test-rust:
	cd $(TIMERS) && cargo test --locked --workspace
	cd $(TIMERS) && cargo test --locked --manifest-path legacy/Cargo.toml
	cd $(TIMERS) && cargo test --locked --manifest-path sharded/Cargo.toml
	cd $(TOKENBUCKET) && cargo test --locked --workspace
	cd $(SUITE_CLI) && cargo test --locked --workspace
	cd $(IO) && cargo test --locked --workspace

# A loom run that runs no test (a cfg that compiles every model out, a filter that matches
# nothing) passes in cargo's eyes: it must report at least one passed test here. The timers
# model compiles the armable timer's source with loom's atomics itself, so test-rust has
# built it already; token_bucket's builds with a `loom` feature in test-rust's target
# directory, so only that crate and loom are compiled again.
test-loom:
	cd $(TIMERS) && mkdir -p target && cargo test --locked \
		--test loom_armable_timer 2>&1 | tee target/loom.log
	@grep -Eq '^test result: ok\. [1-9][0-9]* passed' $(TIMERS)/target/loom.log || { \
		echo "test-loom: no loom model ran (see $(TIMERS)/target/loom.log)" >&2; exit 1; }
	mkdir -p $(SHARED_TARGET) && cd $(TOKENBUCKET) && cargo test --locked -p token_bucket \
		--features loom --test loom_shared_token_bucket 2>&1 | tee $(CURDIR)/$(SHARED_TARGET)/loom.log
	@grep -Eq '^test result: ok\. [1-9][0-9]* passed' $(SHARED_TARGET)/loom.log || { \
		echo "test-loom: no loom model ran (see $(SHARED_TARGET)/loom.log)" >&2; exit 1; }

test-go:
	cd $(POOLS) && go test -race -count=1 ./...
	cd $(POOLS_VITESS) && go test -race -count=1 -tags goexperiment.swissmap ./...

# --durations: the slowest tests in every CI log, to keep make test inside its 20 minutes.
test-python: python-env
	$(VENV)/bin/pytest -n auto --durations=25

## lock: re-pin the Python dependencies (requirements.in -> requirements.lock, and uv's
## requirements-bootstrap.in -> requirements-bootstrap.lock)
lock:
	$(PYTHON) -m venv /tmp/harness-piptools
	/tmp/harness-piptools/bin/pip install --quiet pip-tools
	for name in requirements requirements-bootstrap; do \
		/tmp/harness-piptools/bin/pip-compile --quiet --generate-hashes --allow-unsafe \
			--strip-extras -o $$name.lock $$name.in; done

## schema: write docs/run.schema.json again from the run.json model (harness/rundoc/model.py)
schema: python-env
	$(VENV)/bin/python -m harness.rundoc.schema > docs/run.schema.json

clean:
	rm -rf $(VENV) $(TIMERS)/target $(SHARED_TARGET) $(TOOLS) $(POOLS)/bin $(LETTUCE)/*/target
	$(MAKE) -C bpf clean
