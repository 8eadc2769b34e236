# pgsurgeon developer targets. `make help` lists them.
PYTHON ?= $(if $(wildcard .venv/bin/python),.venv/bin/python,python3)
PYTEST_ARGS ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  %-14s %s\n", $$1, $$2}'

.PHONY: venv
venv: ## create .venv with the package (editable build) and the dev tools
	python3 -m venv .venv
	.venv/bin/pip install -q -U pip
	.venv/bin/pip install -q -e '.[dev]'

.PHONY: develop
develop: ## rebuild the Rust extension into .venv after Rust changes
	.venv/bin/maturin develop --release

.PHONY: fmt
fmt: ## format Rust and Python
	cargo fmt --all
	$(PYTHON) -m ruff format python tests bench
	$(PYTHON) -m ruff check --fix python tests bench

.PHONY: lint
lint: ## cargo fmt --check, clippy -D warnings, ruff, mypy --strict
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check python tests bench
	$(PYTHON) -m ruff format --check python tests bench
	$(PYTHON) -m mypy

.PHONY: test
test: test-python test-rust ## the test suite: pytest against PostgreSQL 15 and 18, then the Rust unit + randomized tests

.PHONY: test-rust
test-rust: ## cargo tests of the core (includes the 200,000-page randomized test)
	cargo test -p pgsurgeon-core

.PHONY: test-python
# After the README's `pip install .` the test tools (pyproject's `test` extra) are not installed yet: add them.
# The tests spend most of their time waiting for servers (start, fsync, recovery): one pytest worker per core, each
# taking whole files so a module's clusters are built once (PYTEST_JOBS= runs them in one process).
PYTEST_JOBS ?= -n auto --dist loadfile
test-python: ## pytest against real PostgreSQL 15 (Debian) and 18 (embedded wheel)
	@$(PYTHON) -c 'import pytest, pytest_timeout, xdist' 2>/dev/null || { \
		echo "make: installing the test tools for $(PYTHON): pip install 'pytest>=8' 'pytest-timeout>=2' 'pytest-xdist>=3'"; \
		$(PYTHON) -m pip install -q 'pytest>=8' 'pytest-timeout>=2' 'pytest-xdist>=3'; }
	$(PYTHON) -m pytest $(PYTEST_JOBS) $(PYTEST_ARGS)

.PHONY: fuzz
fuzz: ## longer fuzzing with cargo-fuzz (needs nightly and cargo-fuzz)
	cd crates/core && cargo +nightly fuzz run inspect_page -- -max_total_time=300

.PHONY: soak
soak: ## long runs of the load tests: five busy backups in a row per version and form (CI takes two)
	PGSURGEON_BUSY_ROUNDS=5 $(PYTHON) -m pytest -q tests/test_backup_busy.py $(PYTEST_ARGS)

.PHONY: bench
bench: ## benchmarks against the anchor tools (pg_checksums, pg_amcheck, server COPY), equal work; results in docs/benchmarks.md
	$(PYTHON) bench/scan.py --check
	$(PYTHON) bench/diagnose.py --check
	$(PYTHON) bench/salvage.py --check
	$(PYTHON) bench/carve.py --repeat 3 --check
	$(PYTHON) bench/unload.py --check
	$(PYTHON) bench/unload_schema.py --check
	$(PYTHON) bench/repair_plan.py --check
	$(PYTHON) bench/health.py --check
	$(PYTHON) bench/wide.py
