# Thin wrapper over CMake: `make run` and `make test` are the two commands a
# newcomer types (see README.md). Everything real lives in CMakeLists.txt.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
SHARED     ?= $(abspath ../shared)
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# The plain build's suite runs one test more than there are cores: its
# server tests mostly wait out deadlines and loads (2 cores: 153 s at
# -j2, 127 s at -j3). The sanitizers' suite keeps every core busy at JOBS.
TEST_JOBS  ?= $(shell echo $$(( $(JOBS) + 1 )))
FUZZ_SECONDS ?= 5
FUZZ_RUNS ?= 0
PREFIX     ?= /usr/local

.PHONY: all deps test-deps build build-asan build-fuzz run install test test-release test-asan test-fuzz test-faults fuzz-long fuzz-coverage clean

all: build

deps:
	@scripts/deps.sh

test-deps:
	@scripts/deps.sh --test

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSPROUT_SHARED_DIR=$(SHARED)
	cmake --build $(BUILD) -j$(JOBS)

run: build
	./$(BUILD)/sprout run -m $(SHARED)/models/stories260K.gguf -p "Once upon a time" -n 64 --temp 0 --metrics

# libsprout.so/.a, sprout.h, sprout.pc and the CMake package under PREFIX
# (docs/INSTALL.md)
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

test: test-deps test-release test-asan test-fuzz

test-release:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DSPROUT_WERROR=ON -DSPROUT_SHARED_DIR=$(SHARED)
	cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(TEST_JOBS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSPROUT_SANITIZE=ON -DSPROUT_WERROR=ON -DSPROUT_SHARED_DIR=$(SHARED)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j$(JOBS)

# Every allocation of every swept path failed in turn, every vocabulary and
# chat template of ../shared included, under ASan's leak check (the suite's
# test_faults takes a subset), then the I/O faults (GGUF writer, store), then
# the server's request path (docs/HARDENING.md).
test-faults:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSPROUT_SANITIZE=ON -DSPROUT_WERROR=ON -DSPROUT_SHARED_DIR=$(SHARED)
	cmake --build $(ASAN_BUILD) -j$(JOBS) --target test_faults test_faults_io test_faults_store test_faults_server
	cd $(ASAN_BUILD)/tests && SPROUT_FAULTS_FULL=1 SPROUT_SHARED_DIR=$(SHARED) ./test_faults && SPROUT_SHARED_DIR=$(SHARED) ./test_faults_io \
	  && SPROUT_SHARED_DIR=$(SHARED) ./test_faults_store && SPROUT_FAULTS_FULL=1 SPROUT_SHARED_DIR=$(SHARED) ./test_faults_server

# libFuzzer needs clang; without it the fuzz run is skipped, not failed.
# Only the fuzz targets are built: the CLI, server and benchmarks are the
# release build's to test.
test-fuzz:
	@if command -v clang >/dev/null 2>&1; then \
	  CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPROUT_FUZZ=ON \
	    -DSPROUT_FUZZ_SECONDS=$(FUZZ_SECONDS) -DSPROUT_FUZZ_RUNS=$(FUZZ_RUNS) -DSPROUT_SHARED_DIR=$(SHARED) && \
	  cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_all && \
	  cd $(FUZZ_BUILD) && ctest --output-on-failure -j$(JOBS); \
	else echo "clang not found: fuzz run skipped"; fi

# Every fuzz target for FUZZ_SECONDS each (default 600; `make fuzz-long
# FUZZ_SECONDS=N`), or until FUZZ_RUNS inputs if that comes first, in a
# build of its own so the suite's short run keeps its settings. The corpora
# grow in that build folder between runs; the table of executions and
# coverage is printed at the end.
fuzz-long:
	$(MAKE) test-fuzz FUZZ_BUILD=build-fuzz-long FUZZ_RUNS=$(FUZZ_RUNS) \
	  FUZZ_SECONDS=$(if $(filter command line,$(origin FUZZ_SECONDS)),$(FUZZ_SECONDS),600)
	@scripts/fuzz_report.sh build-fuzz-long

# The source coverage the campaign's corpora reach, by llvm-cov, each
# target over the parser it is for (scripts/fuzz_coverage.sh).
fuzz-coverage:
	scripts/fuzz_coverage.sh build-fuzz-long build-fuzz-cov $(SHARED)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) build-fuzz-long build-fuzz-cov
