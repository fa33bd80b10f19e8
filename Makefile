# cclab: the two README commands are `make run` and `make test`; both set everything up first.
PY ?= python3
PIP ?= $(PY) -m pip

.PHONY: setup setup-test run test test-rust test-python bench bench-study bench-emu lint clean

# Installs the Python package (building the Rust core with maturin) and its test dependencies.
setup:
	$(PIP) install --quiet --disable-pip-version-check -e ".[test]"
	cargo build --release -p cclab-emu

# Test extras: Ray (the study executor's test) and headless Chromium (the report's test), from
# PyPI and Debian. Chromium needs root to install; without it that one test is skipped.
setup-test:
	$(PIP) install --quiet --disable-pip-version-check -e ".[test,ray]"
	cargo build --release -p cclab-emu
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium) \
		|| echo "chromium not installed: the report screenshot test will be skipped"; }

# The main job: the default study (S0, full grid) on the simulator (no privileges needed).
run: setup
	cclab study s0 -o out/s0

# A study with options, e.g. make study STUDY_ARGS="--quick -o out/s0-quick".
STUDY_ARGS ?= -o out/s0
study: setup
	cclab study s0 $(STUDY_ARGS)

test: setup-test test-rust test-python

test-rust:
	cargo test --workspace --exclude cclab-py

test-python:
	$(PY) -m pytest

# Benchmarks (never timed tests): the core on the S0 25 ms path with per-ACK tracing.
bench:
	cargo build --release -p cclab-sim --bin cclab-bench
	./target/release/cclab-bench
	./target/release/cclab-bench --all-cc

# The full S0 study's wall time (a fresh cache, every core).
bench-study: setup
	rm -rf bench-out/s0 && /usr/bin/time -v cclab study s0 -o bench-out/s0 2>&1 | grep -E "runs in|Elapsed|Maximum resident"

# cclab-link (root): throughput at 0 and 50 ms versus a veth pair, CPU per Gbit/s, delay error.
bench-emu:
	cargo build --release -p cclab-emu
	$(PY) bench/emu_bench.py

lint:
	cargo clippy --workspace --all-targets -- -D warnings

clean:
	rm -rf target out
