# gpuaas build. GNU Make + pkg-config, C17.
#   make            build/gpuaas
#   make run        install missing packages, build, start the demo daemon
#   make test       every test: unit (gcc and clang+ASan/UBSan), integration, style
#   make asan       build/asan/gpuaas with AddressSanitizer + UBSan (clang)
#   make bench      benchmarks (print figures, never fail on time)

CC      ?= cc
BUILD   ?= build
PKGS    := libmicrohttpd libcurl jansson yaml-0.1 sqlite3 libsodium
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

OPT     ?= -O2 -g
CFLAGS  ?= $(OPT)
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# gcc's guess that a bounded snprintf "may be truncated" is noise: truncation there is intended.
WARN    += $(if $(findstring clang,$(CC)),,-Wno-format-truncation)
ALL_CFLAGS := -std=c17 -D_GNU_SOURCE $(WARN) -Isrc $(PKG_CFLAGS) $(CFLAGS) $(SANFLAGS) -MMD -MP
LDLIBS  := $(PKG_LIBS) -ldl -lm

SRC      := $(shell find src -name '*.c' -not -path 'src/shim/*' | sort)
SHIM_SRC := src/shim/gpuaas-shim.c
LIB_SRC  := $(filter-out src/main.c,$(SRC))
OBJ      := $(SRC:%.c=$(BUILD)/obj/%.o)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)

.PHONY: all deps run test unit integration asan clean bench style
all: $(BUILD)/gpuaas

deps:
	@scripts/install-deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/gpuaas: $(OBJ) $(BUILD)/gpuaas-shim
	$(CC) $(SANFLAGS) -o $@ $(OBJ) $(LDLIBS)

# The per-pod shim: libc only, started once per pod (src/shim/gpuaas-shim.c).
$(BUILD)/gpuaas-shim: $(SHIM_SRC)
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE $(WARN) $(CFLAGS) -o $@ $<

$(BUILD)/test-unit: $(LIB_OBJ) $(UNIT_OBJ) $(BUILD)/gpuaas-shim
	$(CC) $(SANFLAGS) -o $@ $(LIB_OBJ) $(UNIT_OBJ) $(LDLIBS) -lcriterion

asan:
	@$(MAKE) --no-print-directory BUILD=build/asan CC=clang OPT="-O1 -g -fno-omit-frame-pointer" \
	  SANFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	  build/asan/gpuaas build/asan/test-unit

run: deps all
	@scripts/demo.sh

# The full suite. Unit tests run twice (gcc -O2, clang with ASan+UBSan); the
# integration tests drive the sanitizer build of the daemon and CLI.
test: deps all $(BUILD)/test-unit asan
	@scripts/style-check.sh
	$(BUILD)/test-unit --jobs 2 --timeout 60
	ASAN_OPTIONS=detect_leaks=1 build/asan/test-unit --jobs 2 --timeout 120
	GPUAAS_BIN=$(CURDIR)/build/asan/gpuaas tests/integration/run.sh

unit: $(BUILD)/test-unit
	$(BUILD)/test-unit --jobs 2

integration: all
	GPUAAS_BIN=$(CURDIR)/$(BUILD)/gpuaas tests/integration/run.sh

bench: all
	@bench/run.sh

clean:
	rm -rf build

-include $(OBJ:.o=.d) $(UNIT_OBJ:.o=.d)
