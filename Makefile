# cclab: the two README commands are `make run` and `make test`; both set everything up first.
PY ?= python3
PIP ?= $(PY) -m pip

.PHONY: setup run test test-rust test-python bench lint clean

# Installs the Python package (building the Rust core with maturin) and its test dependencies.
setup:
	$(PIP) install --quiet --disable-pip-version-check -e ".[test]"

# The main job: the default study on the simulator (no privileges needed).
run: setup
	cclab run s0-25ms -o out/s0-25ms

test: setup test-rust test-python

test-rust:
	cargo test --workspace --exclude cclab-py

test-python:
	$(PY) -m pytest

# Benchmarks (never timed tests): the core on the S0 25 ms path with per-ACK tracing.
bench:
	cargo build --release -p cclab-sim --bin cclab-bench
	./target/release/cclab-bench
	./target/release/cclab-bench --all-cc

lint:
	cargo clippy --workspace --all-targets -- -D warnings

clean:
	rm -rf target out
