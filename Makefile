# vx: plain GNU make. See README.md.
#
#   make            build/vx and the vxplan/vxapply links (first naming any missing package)
#   make check      lint, and every test: unit (plain and under ASan+UBSan), the report page in headless
#                   Chromium, the fake's own tests, end to end
#   make demo       the quickstart against the fake Google Cloud
#   make lint       cppcheck, clang-tidy and clang-format (on the lines changed since the base)
#   make lint-ci    yamllint, tools/check-ci.py and GitHub's own parser on action.yml and the
#                   CI recipes in examples/ci/, tools/check-examples.py on examples/watch/,
#                   tools/check-permissions.py on docs/permissions.md and the role files,
#                   tools/check-kinds.py (the kinds named only in reconcile/kind*.c),
#                   and the generated tables of docs/format.md (in check)
#   make docs       write docs/format.md's generated tables (from reconcile/load/machines.c)
#   make fuzz       libFuzzer targets (clang)
#   make torture    kill, pause, race, hostile-server and fuzz trials (TRIALS=N SEED=S BACKENDS=git,...)
#   make bench      plan benchmarks against the fake (make bench-smoke: every case, small, in check)
#   make install PREFIX=/usr/local   (DESTDIR too): binaries, links, man pages, completions, docs
#   make deb        build/vx_VERSION_ARCH.deb; make check-deb checks and (as root) installs it
#   make release    build/release/: the .deb, vx-VERSION-linux-ARCH.tar.gz and SHA256SUMS
#   make image      the root Dockerfile as vx:VERSION (needs a docker daemon)
#
# BUILD=dir puts every output in another folder (helpers building side by side use this).
# SANITIZE=address,undefined builds everything with those sanitizers.

SHELL    := /bin/bash
BUILD    ?= build
PREFIX   ?= /usr/local
CC       ?= cc
PYTHON   ?= python3
VERSION  := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

PKGS     := yaml-0.1 libcurl libcjson openssl libgit2

# The commit vx is built from, for 'vx version': 12 hex digits, '-dirty' when tracked
# files differ from HEAD, 'unknown' outside a git checkout (a release tarball; or
# pass VX_COMMIT=... to make). Only workflow/version.o is compiled with it, so a new
# commit relinks vx instead of rebuilding everything.
ifeq ($(origin VX_COMMIT),undefined)
VX_COMMIT := $(shell test -e .git && c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && \
	{ git update-index -q --refresh >/dev/null 2>&1; git diff-index --quiet HEAD -- 2>/dev/null || c=$$c-dirty; \
	  echo $$c; } || echo unknown)
endif
WARN     := -Wall -Wextra -Wpedantic -Wformat=2 -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wwrite-strings -Wcast-qual -Wvla \
            -Wimplicit-fallthrough -fno-common
ifneq ($(CI)$(DEVELOPER),)
WARN     += -Werror
endif
OPT      ?= -O2
CFLAGS_ALL = -std=c11 -g $(OPT) $(WARN) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
             -DVX_VERSION='"$(VERSION)"' -I. $(PKG_CFLAGS) $(CFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -lpthread -lm $(LDLIBS)

ifneq ($(SANITIZE),)
CFLAGS_ALL  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS     += -fsanitize=$(SANITIZE)
endif

# pkg-config is only asked when something is compiled, so 'make deps' works without it.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# data/prices_data.c: the price table tools/gen_prices.py writes from data/prices-src/, kept
# apart from the hand-written sources (docs/design-notes.md says why it is committed).
PRICES_SRC := data/prices_data.c
LIB_SRC  := $(sort $(wildcard util/*.c reconcile/*.c reconcile/load/*.c reconcile/out/*.c providers/gcp/*.c state/*.c workflow/*.c) $(PRICES_SRC))
CMD_SRC  := $(sort $(wildcard cmd/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
SUP_SRC  := $(sort $(wildcard tests/unit/support/*.c))
SUP_OBJ  := $(SUP_SRC:%.c=$(BUILD)/%.o)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CMD_OBJ  := $(CMD_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
LIBVX    := $(BUILD)/libvx.a

.PHONY: deb check-deb release release-check image all deps deps-build check check-build check-build-asan check-tests unit unit-bins unit-asan fake-test e2e e2e-asan demo lint lint-ci lint-gh-parse docs fuzz torture bench bench-smoke install clean
all: $(BUILD)/vx $(BUILD)/vxplan $(BUILD)/vxapply

deps:
	@sh tools/deps.sh

# Before anything compiles: name the packages to install rather than fail on a missing
# header. Plain 'make' never installs; 'make deps', 'make check' and 'make demo' do, as root.
deps-build:
	@sh tools/deps.sh --build

# Rebuild everything when the flags change (git's GIT-CFLAGS trick).
$(BUILD)/.flags: FORCE | deps-build
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CFLAGS_ALL) $(LDFLAGS)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_ALL) $(LDFLAGS)' > $@
FORCE:
# Phony, so the stamps above and below are looked at every time (.SECONDARY makes a
# missing FORCE an intermediate file otherwise, never remade).
.PHONY: FORCE

# Keep the test-support objects: they are prerequisites of every test binary.
.SECONDARY:

$(BUILD)/%.o: %.c $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/.commit: FORCE
	@mkdir -p $(BUILD)
	@echo '$(VX_COMMIT)' | cmp -s - $@ || echo '$(VX_COMMIT)' > $@

$(BUILD)/workflow/version.o: workflow/version.c $(BUILD)/.flags $(BUILD)/.commit
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DVX_COMMIT='"$(VX_COMMIT)"' -MMD -MP -c $< -o $@

$(LIBVX): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/vx: $(CMD_OBJ) $(LIBVX)
	$(CC) $(LDFLAGS) -o $@ $(CMD_OBJ) $(LIBVX) $(LDLIBS_ALL)

$(BUILD)/vxplan $(BUILD)/vxapply: $(BUILD)/vx
	ln -sf vx $@

$(BUILD)/tests/%: tests/unit/%.c $(SUP_OBJ) $(LIBVX) $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS) -MMD -MP -o $@ $< $(SUP_OBJ) $(LIBVX) $(LDLIBS_ALL) $(shell pkg-config --libs cmocka 2>/dev/null)

# One unit test: make unit T=test_yaml
unit: $(if $(T),$(BUILD)/tests/$(T),$(UNIT_BIN))
	@sh tests/run-unit.sh $^

unit-bins: $(UNIT_BIN)

# Python's compiled modules go under the build folder, never beside the sources, and are
# written there even where PYTHONDONTWRITEBYTECODE is set (as on our CI machines, to keep
# __pycache__ out of checkouts; this keeps them out too). Without them every Python process
# of the tests compiled what it imported again: each fake Google Cloud (one per e2e test)
# its 8,000 lines, each file checking JSON jsonschema's 180 modules. Nine e2e files a side
# took 210 s of CPU with that and 146 s without (with the keys made once: check-tests).
export PYTHONPYCACHEPREFIX = $(abspath $(BUILD))/pycache
unexport PYTHONDONTWRITEBYTECODE

# LSan: see tests/lsan.supp for the one libgit2 leak suppressed.
export LSAN_OPTIONS = suppressions=$(abspath tests/lsan.supp):print_suppressions=0
export ASAN_OPTIONS = detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS = print_stacktrace=1:halt_on_error=1

ASAN_VARS := BUILD=$(BUILD)/asan SANITIZE=address,undefined OPT=-O1
unit-asan:
	@$(MAKE) --no-print-directory unit $(ASAN_VARS)

# The report page in headless Chromium (tests/browser/check_report.py): the sample document's
# page has one bar per attempt with scripts on and off and in print, no console error and no
# request but the file; its screenshot is $(BUILD)/report-sample.png. Then the checker's own
# tests show it refuses each of those faults. One browser each.
REPORT_SAMPLE := tests/data/report/sample.json
.PHONY: browser-check
browser-check: $(BUILD)/tests/test_report_html
	@VX_REPORT_HTML_OUT=$(abspath $(BUILD)/report-sample.html) $(BUILD)/tests/test_report_html
	$(PYTHON) tests/browser/check_report.py $(BUILD)/report-sample.html $(REPORT_SAMPLE) $(BUILD)/report-sample.png
	@$(PYTHON) tests/run_unittest.py browser tests/browser

# CHECK_JOBS files at a time, not more: the fake's own tests start many fakes. One at a
# time took 41 s and 40 s, two 16 s and 16 s (2 cores, idle).
fake-test:
	@VX_TEST_JOBS=$(CHECK_JOBS) $(PYTHON) tests/run_unittest.py fakegcp tests/fakegcp

e2e: all
	@VX_BIN=$(abspath $(BUILD)/vx) sh tests/e2e/run.sh

# make check: the same steps as one after the other, in less time. Both trees (plain and
# ASan+UBSan) build side by side with CHECK_JOBS compilers; then the unit tests of each;
# then the fake's own tests (CHECK_JOBS files at once: see fake-test); then e2e and e2e-asan share one pool of
# VX_TEST_JOBS test files (tests/run_unittest.py), each ending with its own 'NAME: N passed,
# N failed' line. The .deb's tree (a third build: Debian's flags) builds with CHECK_JOBS too.
CHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
check: deps
	@sh tools/check-banned.sh
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory lint-ci
	@$(MAKE) --no-print-directory -j$(CHECK_JOBS) check-build
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory unit-asan
	@$(MAKE) --no-print-directory browser-check
	@$(MAKE) --no-print-directory fake-test
	@$(MAKE) --no-print-directory check-tests
	@$(MAKE) --no-print-directory bench-smoke
	@$(MAKE) --no-print-directory -j$(CHECK_JOBS) check-deb
	@$(MAKE) --no-print-directory release-check
	@$(MAKE) --no-print-directory image IMAGE_SKIP_OK=1

check-build: all unit-bins check-build-asan
check-build-asan:
	@$(MAKE) --no-print-directory all unit-bins $(ASAN_VARS)

check-tests: $(BUILD)/e2e-keys.pem
	@VX_E2E_KEYS=$(abspath $(BUILD)/e2e-keys.pem) \
	  $(PYTHON) tests/run_unittest.py e2e tests/e2e "$${VX_E2E_PATTERN:-test_*.py}" VX_BIN=$(abspath $(BUILD)/vx) \
	  -- e2e-asan tests/e2e "$${VX_E2E_PATTERN:-test_*.py}" VX_BIN=$(abspath $(BUILD)/asan/vx)

# The RSA keys the fakes of every e2e file give out (tests/e2e/harness.py, fake_keys):
# made once, not by each of the 130 files' processes.
$(BUILD)/e2e-keys.pem:
	@mkdir -p $(dir $@)
	@umask 077 && for i in 1 2; do openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 2>/dev/null \
	  || exit 1; done > $@.tmp && mv $@.tmp $@

e2e-asan:
	@$(MAKE) --no-print-directory all $(ASAN_VARS)
	@VX_BIN=$(abspath $(BUILD)/asan/vx) VX_E2E_NAME=e2e-asan sh tests/e2e/run.sh

demo: deps all
	@sh tools/demo.sh $(abspath $(BUILD)/vx)

# The CI recipes users copy: well-formed YAML (yamllint, tools/yamllint.yml), the
# keys GitHub and GitLab need (tools/check-ci.py), and the checker's own tests.
# The ways to run vx watch (examples/watch/): the unit and the Dockerfile keep to
# what docs/watch.md says (tools/check-examples.py); where systemd-analyze exists,
# it verifies the unit too, with ExecStart pointed at a vx that exists (any
# complaint fails: it exits 0 on some). docs/permissions.md and the custom role
# files say what the code's permission table says (tools/check-permissions.py).
# The man pages list each command's flags as its flag table in cmd/ does, every
# command has one, and they are 'mandoc -T lint' clean (tools/check-man.py). The root
# Dockerfile and the watch example's pin their base images by tag and digest and run as a
# user (tools/check-dockerfile.py).
CI_RECIPES := $(wildcard examples/ci/github/*.yml) examples/ci/gitlab/.gitlab-ci.yml examples/ci/gitlab/vx.gitlab-ci.yml
WATCH_EXAMPLES := examples/watch/vx-watch.service examples/watch/Dockerfile
GEN_MACHINES := $(BUILD)/tools/gen-machine-table
lint-ci: $(GEN_MACHINES)
	yamllint --strict -c tools/yamllint.yml $(CI_RECIPES) action.yml examples/watch/k8s-deployment.yaml
	$(PYTHON) tools/check-ci.py $(CI_RECIPES) action.yml
	@$(MAKE) --no-print-directory lint-gh-parse
	$(PYTHON) tools/check-examples.py $(WATCH_EXAMPLES)
	$(PYTHON) tools/check-permissions.py
	$(PYTHON) tools/check-man.py
	$(PYTHON) tools/check-dockerfile.py Dockerfile examples/watch/Dockerfile
	$(PYTHON) tools/check-kinds.py
	$(PYTHON) tools/check-layers.py
	$(PYTHON) tools/check-funcs.py
	$(PYTHON) tools/check-links.py
	@if command -v systemd-analyze >/dev/null 2>&1; then \
		d=$$(mktemp -d) && \
		sed 's|^ExecStart=[^ ]*/vx |ExecStart=/bin/true |' examples/watch/vx-watch.service >$$d/vx-watch.service && \
		out=$$(systemd-analyze verify $$d/vx-watch.service 2>&1); rc=$$?; rm -rf $$d; \
		if [ $$rc != 0 ] || [ -n "$$out" ]; then echo "$$out"; echo "systemd-analyze verify: examples/watch/vx-watch.service"; exit 1; fi; \
		echo "systemd-analyze verify examples/watch/vx-watch.service: ok"; \
	fi
	$(GEN_MACHINES) | $(PYTHON) tools/splice-doc.py --check docs/format.md machine-table
	@$(PYTHON) tests/run_unittest.py check-ci tests/ci

# docs/format.md's machine tables, printed from reconcile/load/machines.c's own tables
# (tools/gen-machine-table.c includes that file), so they cannot drift: lint-ci
# fails when the document differs, 'make docs' rewrites it.
$(GEN_MACHINES): tools/gen-machine-table.c $(BUILD)/util/buf.o $(BUILD)/util/suggest.o $(BUILD)/util/text.o $(BUILD)/util/err.o $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS) -MMD -MP -o $@ $< $(BUILD)/util/buf.o $(BUILD)/util/suggest.o $(BUILD)/util/text.o $(BUILD)/util/err.o

docs: $(GEN_MACHINES)
	$(GEN_MACHINES) | $(PYTHON) tools/splice-doc.py --write docs/format.md machine-table

# GitHub's own parser (@actions/workflow-parser, pinned in tools/ci-parser/) on action.yml and
# the workflows, and gitlab-ci-local (GitLab's schema, pinned there too) on the GitLab recipe,
# installed from the npm registry into $(BUILD)/ci-parser on first use; and
# actionlint on the workflows where it is installed (Debian 12 does not package it).
GH_WORKFLOWS := $(wildcard examples/ci/github/*.yml)
CI_PARSER := $(BUILD)/ci-parser
$(CI_PARSER)/node_modules/.package-lock.json: tools/ci-parser/package.json tools/ci-parser/package-lock.json
	@mkdir -p $(CI_PARSER)
	cp tools/ci-parser/package.json tools/ci-parser/package-lock.json $(CI_PARSER)/
	cd $(CI_PARSER) && npm ci --no-audit --no-fund --silent
lint-gh-parse:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then \
		$(MAKE) -s --no-print-directory $(CI_PARSER)/node_modules/.package-lock.json && \
		node tools/check-gh-parse.mjs $(CI_PARSER)/node_modules action.yml $(GH_WORKFLOWS) && \
		sh tools/check-gitlab-ci.sh $(abspath $(CI_PARSER))/node_modules examples/ci/gitlab; \
	else echo "lint-ci: @actions/workflow-parser and gitlab-ci-local not run: they need node (20 or later) and npm"; fi
	@if command -v actionlint >/dev/null 2>&1; then actionlint $(GH_WORKFLOWS); \
	else echo "lint-ci: actionlint not run: not installed (Debian 12 does not package it)"; fi
	@if command -v shellcheck >/dev/null 2>&1; then shellcheck tools/setup-vx.sh tools/mkrelease.sh && \
		echo "shellcheck tools/setup-vx.sh (the setup action's steps), tools/mkrelease.sh: ok"; \
	else echo "lint-ci: shellcheck not run on tools/setup-vx.sh: not installed"; fi

# make lint (in make check, first): cppcheck, and clang-tidy (.clang-tidy) on each product .c file once,
# LINT_JOBS at a time; then tools/check-format.py: clang-format (.clang-format) on the lines of the
# product files changed since the base (the file says which base, and why not the whole tree).
# cppcheck runs as one process over every file, every time (well under a minute): its
# whole-program (ctu) checks follow a NULL through calls across files, which its -j and its
# build-dir cache miss (cppcheck 2.10). Each clang-tidy (seconds a file: the analyzer) leaves a
# stamp, $(BUILD)/lint/FILE.ok, newer than the file's object, which depends on every header the
# file includes: a second run looks again only at the files that changed, or whose headers did.
# $(PRICES_SRC) (generated: one byte array) is not given to cppcheck, which takes
# minutes over its 11,000 lines of numbers and has no code there to check.
LINT_JOBS  ?= $(CHECK_JOBS)
LINT_SRC   := $(LIB_SRC) $(CMD_SRC)
LINT_OK    := $(LINT_SRC:%.c=$(BUILD)/lint/%.ok)
LINT_FLAGS  = -std=c11 -I. -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DVX_VERSION='"$(VERSION)"' $(PKG_CFLAGS)
.PHONY: lint-cppcheck lint-tidy lint-format
lint:
	@$(MAKE) --no-print-directory -j$(LINT_JOBS) lint-cppcheck lint-tidy
	@$(MAKE) --no-print-directory lint-format

lint-format:
	@$(PYTHON) tools/check-format.py

lint-cppcheck:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --inline-suppr --suppress=missingIncludeSystem -I. $(filter-out $(PRICES_SRC),$(LINT_SRC))

lint-tidy: $(LINT_OK)
	@echo "clang-tidy: $(words $(LINT_SRC)) files: ok"

# clang-tidy says "N warnings generated" for the system headers' warnings it does not show.
$(BUILD)/lint/%.ok: %.c $(BUILD)/%.o .clang-tidy
	@mkdir -p $(dir $@)
	@set -o pipefail; clang-tidy --quiet $< -- $(LINT_FLAGS) 2>&1 | { grep -v '^[0-9]* warnings\? generated\.$$' || true; }
	@touch $@

fuzz:
	@$(MAKE) --no-print-directory -f tests/fuzz/fuzz.mk BUILD=$(BUILD)/fuzz

# Not part of 'make check': minutes, clang for the fuzz section. See docs/measurements.md, "Torture".
# TRIALS (kill trials per backend; pause and race run a fifth and a tenth of it), SEED,
# BACKENDS (git,git-remote,gcs), SECTIONS (kill,pause,race,lost,lostmid,hostile,fuzz; kill runs kill-persistent and
# kill-future too, which may be named alone), TRIAL and CLEAN (replay one),
# FUZZ_TIME (seconds per fuzz target).
TRIALS    ?= 100
FUZZ_TIME_TORTURE ?= 20
torture: all
	@$(MAKE) --no-print-directory all BUILD=$(BUILD)/asan SANITIZE=address,undefined OPT=-O1
	@TRIALS=$(TRIALS) SEED=$(SEED) BACKENDS=$(BACKENDS) SECTIONS=$(SECTIONS) TRIAL=$(TRIAL) CLEAN=$(CLEAN) \
	  FUZZ_TIME=$(FUZZ_TIME_TORTURE) VX=$(abspath $(BUILD)/vx) VX_ASAN=$(abspath $(BUILD)/asan/vx) \
	  OUT=$(abspath $(BUILD)/torture) $(PYTHON) tools/torture/torture.py

# make bench VS=OTHER/vx also runs plan, validate, an idle watch cycle and report with OTHER
# and this build in turn, and prints the medians side by side (tests/bench/bench.py).
bench: all
	@VX_BIN=$(abspath $(BUILD)/vx) VX_BENCH_VS=$(VS) $(PYTHON) tests/bench/bench.py

# Every case of the benchmark at a small size (tests/bench/bench.py, VX_BENCH_SMOKE): each must
# run and succeed, so the benchmark cannot rot between the times someone runs it. No timing is
# asserted. In make check, after the end-to-end tests.
bench-smoke: all
	@VX_BIN=$(abspath $(BUILD)/vx) VX_BENCH_VS=$(abspath $(BUILD)/vx) VX_BENCH_SMOKE=1 $(PYTHON) tests/bench/bench.py >$(BUILD)/bench-smoke.log 2>&1 || \
	  { cat $(BUILD)/bench-smoke.log; echo "bench-smoke: failed (the log above)"; exit 1; }
	@echo "bench-smoke: every case ran ($(BUILD)/bench-smoke.log)"

# Binaries, vxplan/vxapply links, man pages, completions, docs and examples (tools/install.sh).
install: all
	@sh tools/install.sh $(BUILD) '$(DESTDIR)' '$(PREFIX)'

# The Debian package (docs/packaging.md): vx built again in $(BUILD)/deb with Debian's
# hardening flags, staged by tools/install.sh, packed by tools/mkdeb.sh. make check-deb
# builds it and checks it (tools/check-deb.sh: contents, lintian, and as root dpkg -i,
# vx version, man -w, the bash completion, dpkg -r).
# The package's version has the Debian revision (-1: a native one, without it, would
# want changelog.gz, not changelog.Debian.gz); the file is named by VERSION alone,
# vx_0.1.0_amd64.deb, the name the release recipe and the setup action use.
DEB_VERSION := $(VERSION)-1
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB         := $(BUILD)/vx_$(VERSION)_$(DEB_ARCH).deb
DEB_FLAGS    = DEB_BUILD_MAINT_OPTIONS=hardening=+all
deb:
	@$(MAKE) --no-print-directory all BUILD=$(BUILD)/deb \
	  CFLAGS="$$($(DEB_FLAGS) dpkg-buildflags --get CFLAGS) $$($(DEB_FLAGS) dpkg-buildflags --get CPPFLAGS)" \
	  LDFLAGS="$$($(DEB_FLAGS) dpkg-buildflags --get LDFLAGS)"
	@sh tools/mkdeb.sh $(BUILD)/deb $(DEB) $(DEB_VERSION)

check-deb: deb
	@sh tools/check-deb.sh $(DEB) $(VERSION)

# What a release publishes, in $(BUILD)/release/ (tools/mkrelease.sh): the .deb, a tarball of the
# same binary with its links, man pages, completions and a README naming the Debian 12 runtime
# packages (not static: docs/packaging.md says why), and SHA256SUMS. release-check serves that
# folder on a loopback port and runs the setup action's script against it
# (tests/release/test_release.py). Both in make check, after check-deb (which built the .deb).
release: deb
	@sh tools/mkrelease.sh $(BUILD) $(VERSION) $(DEB)

release-check: release
	@VX_RELEASE_DIR=$(abspath $(BUILD)/release) VX_VERSION=$(VERSION) $(PYTHON) tests/run_unittest.py release tests/release

# The image (root Dockerfile, docs/packaging.md). Without a docker daemon it fails
# saying why; make check's call (IMAGE_SKIP_OK=1) says why and goes on.
IMAGE ?= vx:$(VERSION)
image:
	@sh tools/image.sh $(IMAGE) $(VERSION) $(VX_COMMIT) $(if $(IMAGE_SKIP_OK),--skip-ok)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)
