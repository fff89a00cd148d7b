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

clean:
	rm -rf .venv .cache results
