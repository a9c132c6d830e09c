# gpuaas build. GNU Make + pkg-config, C17.
#   make            build/gpuaas
#   make run        install missing packages, build, start the demo daemon
#   make test       every test: unit (gcc and clang+ASan/UBSan), integration, style
#   make asan       build/asan/gpuaas with AddressSanitizer + UBSan (clang)
#   make bench      benchmarks (print figures, never fail on time)
#   make cuda       build/libgpuaas-cuda.so (the pods' CUDA shim), its fake driver and tests

CC      ?= cc
BUILD   ?= build
PKGS    := libcurl jansson yaml-0.1 sqlite3 libsodium libgit2
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

OPT     ?= -O2 -g
CFLAGS  ?= $(OPT)
# gcc's -Wformat-truncation stays on: nothing is cut silently (a buffer is provably big
# enough, or snprintf's result is checked and the input refused with the field named).
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
ALL_CFLAGS := -std=c17 -D_GNU_SOURCE $(WARN) -Isrc $(PKG_CFLAGS) $(CFLAGS) $(SANFLAGS) -MMD -MP
LDLIBS  := $(PKG_LIBS) -ldl -lm

SRC      := $(shell find src -name '*.c' -not -path 'src/shim/*' -not -path 'src/cudashim/*' | sort)
SHIM_SRC := src/shim/gpuaas-shim.c
LIB_SRC  := $(filter-out src/main.c,$(SRC))
OBJ      := $(SRC:%.c=$(BUILD)/obj/%.o)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
# The portal's static assets (web/) are compiled into the binary (scripts/embed-assets.sh).
ASSETS   := $(shell find web -type f 2>/dev/null | sort)
GEN_SRC  := $(BUILD)/gen/portal_assets.c
GEN_OBJ  := $(BUILD)/obj/gen/portal_assets.o
OBJ      += $(GEN_OBJ)
LIB_OBJ  += $(GEN_OBJ)
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)

.PHONY: all deps run test test-installed unit integration asan clean bench style fakes fuzz fuzz-build fuzz-short cuda
all: $(BUILD)/gpuaas

deps:
	@scripts/install-deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(GEN_SRC): $(ASSETS) scripts/embed-assets.sh
	@mkdir -p $(dir $@)
	@scripts/embed-assets.sh $@ web

$(GEN_OBJ): $(GEN_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/gpuaas: $(OBJ) $(BUILD)/gpuaas-shim
	$(CC) $(SANFLAGS) -o $@ $(OBJ) $(LDLIBS)

# The per-pod shim: libc only, started once per pod (src/shim/gpuaas-shim.c).
$(BUILD)/gpuaas-shim: $(SHIM_SRC)
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) $(CFLAGS) -o $@ $<

# The gateway's stand-in for vLLM in tests and benchmarks (tests/fakes/fake_openai.c).
$(BUILD)/fake-openai: tests/fakes/fake_openai.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(SANFLAGS) -o $@ $< $(shell pkg-config --libs jansson)

# bench/usage_write.c: the usage writer against a one-table SQLite reference (make bench).
$(BUILD)/bench-usage-write: bench/usage_write.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_OBJ) $(LDLIBS)

# bench/windows_save.c: the loop's share of saving rate-limit windows (make bench).
$(BUILD)/bench-windows-save: bench/windows_save.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_OBJ) $(LDLIBS)

# bench/fleet_publish.c: commits/s of the fleet's git publisher (make bench).
$(BUILD)/bench-fleet-publish: bench/fleet_publish.c $(LIB_OBJ)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_OBJ) $(LDLIBS)

$(BUILD)/test-unit: $(LIB_OBJ) $(UNIT_OBJ) $(BUILD)/gpuaas-shim
	$(CC) $(SANFLAGS) -o $@ $(LIB_OBJ) $(UNIT_OBJ) $(LDLIBS) -lcriterion

# A stand-in libnvidia-ml.so.1 for machines without a GPU (tests/fakes/nvml): the unit and
# integration tests load it through the same dlopen path as the real library. The "old"
# variant lacks nvmlInit_v2, as a driver too old to use would.
FAKE_NVML := build/fakes/nvml/libnvidia-ml.so.1 build/fakes/nvml-old/libnvidia-ml.so.1
build/fakes/nvml/libnvidia-ml.so.1: tests/fakes/nvml/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) -O1 -g -fPIC -shared -fvisibility=hidden -Wl,-soname,libnvidia-ml.so.1 -o $@ $<
build/fakes/nvml-old/libnvidia-ml.so.1: tests/fakes/nvml/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) -DFAKE_NVML_OLD -O1 -g -fPIC -shared -fvisibility=hidden -Wl,-soname,libnvidia-ml.so.1 -o $@ $<
$(BUILD)/test-unit: $(FAKE_NVML)
fakes: $(FAKE_NVML)

# Issue 20: libgpuaas-cuda.so, the CUDA driver shim injected into pods on shared GPUs
# (src/cudashim, docs/gpu-sharing.md "Limits inside the pod"): libc, libdl and libpthread
# only. The fake libcuda.so.1 it is tested against (tests/fakes/cuda), the test programs
# (tests/cuda) and the launch benchmark (bench/cuda_launch.c).
CUDASHIM_SRC := $(sort $(wildcard src/cudashim/*.c))
CUDA_TESTS   := build/cuda/cuda_probe build/cuda/cuda_link build/bench-cuda-launch
build/libgpuaas-cuda.so: $(CUDASHIM_SRC) $(wildcard src/cudashim/*.h) src/gpu/cuda_region.h
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) -Isrc $(CFLAGS) -fPIC -shared -fvisibility=hidden \
	  -Wl,-soname,libgpuaas-cuda.so -o $@ $(CUDASHIM_SRC) -ldl -lpthread
build/fakes/cuda/libcuda.so.1: tests/fakes/cuda/fake_cuda.c src/cudashim/cuda_api.h
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) -Isrc -O1 -g -fPIC -shared -fvisibility=hidden \
	  -Wl,-soname,libcuda.so.1 -o $@ $< -lpthread
build/cuda/cuda_probe: tests/cuda/cuda_probe.c src/cudashim/cuda_api.h src/gpu/cuda_region.h
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) -Isrc -O1 -g -o $@ $< -ldl
# linked against the fake (as an application built with -lcuda is), found through its rpath
build/cuda/cuda_link: tests/cuda/cuda_link.c build/fakes/cuda/libcuda.so.1
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) -Isrc -O1 -g -o $@ $< build/fakes/cuda/libcuda.so.1
build/bench-cuda-launch: bench/cuda_launch.c src/cudashim/cuda_api.h
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) -Isrc -O2 -o $@ $< -ldl
cuda: build/libgpuaas-cuda.so build/fakes/cuda/libcuda.so.1 $(CUDA_TESTS)
fakes: build/fakes/cuda/libcuda.so.1
$(BUILD)/gpuaas: build/libgpuaas-cuda.so

asan:
	@$(MAKE) --no-print-directory BUILD=build/asan CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
	  SANFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  build/asan/gpuaas build/asan/test-unit build/asan/fake-openai

# libFuzzer targets (fuzz/fuzz_*.c, docs/development.md "Fuzzing"): the library built by
# clang with coverage for libFuzzer plus ASan/UBSan in build/fuzz/, one binary per target.
# `make fuzz` runs each for FUZZ_SECONDS; `make test` runs each for 5 s (about 80 s in all).
FUZZ_SECONDS ?= 60
FUZZ_NAMES := $(patsubst fuzz/%.c,%,$(sort $(wildcard fuzz/fuzz_*.c)))
fuzz-build:
	@echo "fuzz: building build/fuzz/bin/ (clang: libFuzzer, ASan, UBSan)"
	@$(MAKE) --no-print-directory -s BUILD=build/fuzz CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
	  SANFLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
	  $(FUZZ_NAMES:%=build/fuzz/bin/%)

$(BUILD)/bin/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_util.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LINK $@"
	@$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB_OBJ) $(LDLIBS)

fuzz: fuzz-build
	fuzz/run.sh $(FUZZ_SECONDS)

fuzz-short: fuzz-build
	fuzz/run.sh 5

# run and test install what is missing first, then build in a second make: the first one
# parsed this file (and ran pkg-config) before the packages were there.
run: deps
	@$(MAKE) --no-print-directory all build/fake-openai
	@scripts/demo.sh

# The full suite. Unit tests run twice (gcc -O2, clang with ASan+UBSan); the
# integration tests drive the sanitizer build of the daemon and CLI.
test: deps
	@$(MAKE) --no-print-directory test-installed

test-installed: all $(BUILD)/test-unit $(BUILD)/fake-openai asan $(FAKE_NVML) cuda
	@scripts/style-check.sh
	$(BUILD)/test-unit --jobs 2 --timeout 60
	ASAN_OPTIONS=detect_leaks=1 build/asan/test-unit --jobs 2 --timeout 120
	@$(MAKE) --no-print-directory fuzz-short
	@tests/portal/install.sh
	GPUAAS_BIN=$(CURDIR)/build/asan/gpuaas tests/integration/run.sh

unit: $(BUILD)/test-unit
	$(BUILD)/test-unit --jobs 2

integration: all $(FAKE_NVML) cuda
	GPUAAS_BIN=$(CURDIR)/$(BUILD)/gpuaas tests/integration/run.sh

bench: all cuda $(BUILD)/fake-openai $(BUILD)/bench-usage-write $(BUILD)/bench-windows-save $(BUILD)/bench-fleet-publish
	@bench/run.sh

clean:
	rm -rf build

-include $(OBJ:.o=.d) $(UNIT_OBJ:.o=.d)
