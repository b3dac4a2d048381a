# `make run` and `make test` each create .venv and install what is missing.
PY      := .venv/bin/python
STAMP   := .venv/.installed
export LITELLM_LOCAL_MODEL_COST_MAP := True
export NUMBA_CACHE_DIR := $(CURDIR)/.venv/numba-cache

.PHONY: run test perf clean bench-strategies bench-negative bench-report report-screenshots

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	.venv/bin/evolve launch configs/p04.yaml

# Two workers (CI has two cores), whole files per worker: each file's Ray session and sandbox stay in one process.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

perf: $(STAMP)
	.venv/bin/evolve perf sandbox
	.venv/bin/evolve perf brute

clean:
	rm -rf .venv .pytest_cache

# islands vs tree vs refine on a scripted model (tests/benchmarks/strategies.py); about 6 minutes
bench-strategies: $(STAMP)
	cd tests && ../.venv/bin/python -m benchmarks.strategies --seeds 0,1,2,3,4,5,6,7 --budget 16 --out ../runs/strategies-$$(date +%Y%m%d-%H%M%S)

# distinct routes and behaviour signatures per 100 proposals with and without negative prompting
# (tests/benchmarks/negative_diversity.py); about 5 minutes
bench-negative: $(STAMP)
	cd tests && ../.venv/bin/python -m benchmarks.negative_diversity --seeds 0,1,2,3,4 --proposals 100 --out ../runs/negative-$$(date +%Y%m%d-%H%M%S)

# the run report on a synthetic 10,000-program run: size, build time, time to open in headless Chromium
bench-report: $(STAMP)
	cd tests && ../.venv/bin/python -m benchmarks.report_scale --programs 10000 --out ../runs/report-scale

# the report screenshots of docs/reports.md (a real search against the scripted model; headless Chromium)
report-screenshots: $(STAMP)
	cd tests && ../.venv/bin/python -m benchmarks.report_screenshot --out ../docs
