# privgen - the two commands a user needs are `make run` and `make test`.
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE   ?= cmake
BUILD_TYPE ?= Release
ASAN_OPTIONS_TEST ?= detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1

.PHONY: all deps deps-test configure build test bench bench-contend format clean run test-asan fuzz \
	replicas replicas-stop replicas-status

all: build

deps:
	@bash scripts/deps.sh

# Chromium (Debian) and playwright-core (npm, pinned by tests/web/package-lock.json)
# for the dashboard browser test; no browser is downloaded.
deps-test: deps
	@bash scripts/deps.sh --browser
	@[ -d tests/web/node_modules/playwright-core ] || npm ci --prefix tests/web --no-audit --no-fund --silent

configure: deps
	@$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null

build: configure
	@$(CMAKE) --build $(BUILD) -j $(JOBS)

# Builds from scratch if needed and runs every CTest suite.
test: deps-test build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Benchmarks print JSON lines; peers (POT, PyTorch) run in the same invocation.
bench: configure
	@bash scripts/deps.sh --bench
	@$(CMAKE) --build $(BUILD) -j $(JOBS)
	@bash bench/run.sh $(BUILD)

# The figures of training under load (kernels and service under a competing process), ~10 min.
bench-contend: configure
	@$(CMAKE) --build $(BUILD) -j $(JOBS)
	@bash bench/contend.sh $(BUILD)

# Every suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Leak checking stays on (OpenMP/OpenBLAS need no suppressions; see tests/fuzz/README.md).
test-asan: deps
	@$(CMAKE) -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPRIVGEN_SANITIZE=ON >/dev/null
	@$(CMAKE) --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=$(ASAN_OPTIONS_TEST) UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS)

# libFuzzer + ASan/UBSan (clang): each tests/fuzz target runs FUZZ_SECONDS on a
# copy of its seed corpus (FUZZ_TARGETS="csv npy" restricts the set).
FUZZ_SECONDS ?= 60
FUZZ_BUILD   ?= build-fuzz
fuzz: deps
	@$(CMAKE) -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DPRIVGEN_FUZZ=ON -DPRIVGEN_SANITIZE=ON >/dev/null
	@$(CMAKE) --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_BUILD)

format:
	@find engine render service api cli bench tests -name '*.[ch]' -print0 2>/dev/null | xargs -0 clang-format -i

# Serves the API on 127.0.0.1:8080 with its state in ./var (PRIVGEN_* env vars
# or ARGS="--listen 0.0.0.0:9000" override). The admin token is written on the
# first start to var/admin.token.
run: build
	@echo "privgend: http://$${PRIVGEN_LISTEN:-127.0.0.1:8080}  (admin token: $${PRIVGEN_DATA_DIR:-./var}/admin.token; Ctrl-C stops)"
	@exec $(BUILD)/bin/privgend --data-dir $${PRIVGEN_DATA_DIR:-./var} $(ARGS)

# A local PostgreSQL, 3 replicas and HAProxy in front (scripts/replicas.sh;
# REPLICAS_N / REPLICAS_PORT / REPLICAS_ARGS override). Prints the balancer
# URL and the admin token; `make replicas-stop` removes everything.
replicas: build
	@bash scripts/deps.sh --replicas
	@BUILD=$(BUILD) bash scripts/replicas.sh start

replicas-stop:
	@BUILD=$(BUILD) bash scripts/replicas.sh stop

replicas-status:
	@BUILD=$(BUILD) bash scripts/replicas.sh status

clean:
	@rm -rf $(BUILD) build-asan
