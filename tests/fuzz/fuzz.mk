# libFuzzer targets: every tests/fuzz/fuzz_*.c, built with clang and
# ASan+UBSan against the whole vx library, then run for a bounded time.
# Called by the top-level 'make fuzz' as:
#   make -f tests/fuzz/fuzz.mk BUILD=build/fuzz
# Knobs: FUZZ_TIME (seconds per target, default 30), FUZZ_JOBS, CLANG.
#
# Seeds for fuzz_NAME: every file under tests/data/NAME/, tests/fuzz/corpus/fuzz_NAME/
# (replies captured from the fake, for the API parsers) and, for YAML,
# examples/. They are copied into $(BUILD)/corpus/NAME, which the fuzzer
# grows, so runs never write into the source tree.

SHELL     := /bin/bash
BUILD     ?= build/fuzz
CLANG     ?= clang
FUZZ_TIME ?= 30
PKGS      := yaml-0.1 libcurl libcjson openssl libgit2

SAN       := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
CFLAGS_F  := -std=c11 -g -O1 $(SAN) -fsanitize=fuzzer-no-link -D_POSIX_C_SOURCE=200809L \
             -D_DEFAULT_SOURCE -DVX_VERSION='"fuzz"' -DVX_FUZZING=1 -I. \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS_F    := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm

LIB_SRC   := $(sort $(wildcard util/*.c reconcile/*.c reconcile/load/*.c reconcile/out/*.c providers/gcp/*.c state/*.c) data/prices_data.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
FUZZ_SRC  := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN  := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/%)
FUZZ_RUN  := $(FUZZ_SRC:tests/fuzz/%.c=run-%)

SEEDS_fuzz_yaml := examples tests/data/yaml

.PHONY: all build $(FUZZ_RUN)
all: $(FUZZ_RUN)
build: $(FUZZ_BIN)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CLANG) $(CFLAGS_F) -MMD -MP -c $< -o $@

$(BUILD)/libvx-fuzz.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libvx-fuzz.a
	@mkdir -p $(dir $@)
	$(CLANG) $(CFLAGS_F) -fsanitize=fuzzer -o $@ $< $(BUILD)/libvx-fuzz.a $(LIBS_F)

# One run per target, bounded in time and memory. The crash artifacts (if
# any) land in $(BUILD)/artifacts/ and the run fails.
$(FUZZ_RUN): run-fuzz_%: $(BUILD)/fuzz_%
	@mkdir -p $(BUILD)/corpus/$* $(BUILD)/artifacts
	@for d in tests/data/$* tests/fuzz/corpus/fuzz_$* $(SEEDS_fuzz_$*); do \
		[ -d "$$d" ] || continue; \
		find "$$d" -type f -size -1024k | while read -r f; do \
			cp -f "$$f" "$(BUILD)/corpus/$*/seed-$$(sha1sum < "$$f" | cut -c1-16)"; \
		done; \
	done
	@echo "fuzz: $* for $(FUZZ_TIME)s"
	$(BUILD)/fuzz_$* -max_total_time=$(FUZZ_TIME) -rss_limit_mb=2048 -timeout=10 \
		-print_final_stats=1 -artifact_prefix=$(BUILD)/artifacts/$*- \
		$(BUILD)/corpus/$* 2>&1 | tail -n 20; exit $${PIPESTATUS[0]}

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
