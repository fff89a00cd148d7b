# `make run`: a quick local benchmark run with the embedded datasink, printing a result table.
# `make test`: the whole test suite. Both set up everything first (scripts/setup.sh).
.PHONY: setup run test test-fast lint bench clean

setup:
	scripts/setup.sh

run: setup
	scripts/run-demo.sh

test: setup
	scripts/test.sh

# pure logic and parsers on recorded real outputs, in parallel: a few minutes
test-fast: setup
	scripts/test.sh --fast

lint: setup
	.venv/bin/ruff check redis_benchmarks_spec tests benchmarks
	.venv/bin/rbs suites lint test-suites

# the checkout's embedded datasink lives in .cache/datasink: stopped (if this checkout
# started it) before its folder goes
clean:
	if [ -x .venv/bin/rbs ]; then .venv/bin/rbs datasink down || true; fi
	rm -rf .venv .cache results
