# SPDX-License-Identifier: GPL-2.0
#
# Thin wrapper: the module's build logic lives in Kbuild (read by kbuild,
# dkms and in-tree builds), the userspace build in CMakeLists.txt, and the
# test harness in tools/.

KERNELRELEASE ?= $(shell uname -r)
KERNELDIR ?= /lib/modules/$(KERNELRELEASE)/build
PREFIX ?= /usr/local
BUILD ?= $(CURDIR)/build

all: module user

module:
	$(MAKE) -C $(KERNELDIR) M=$(CURDIR) modules

module-install: module
	$(MAKE) -C $(KERNELDIR) M=$(CURDIR) modules_install

# The prefix is set at configure time too: the library directory
# (lib/<multiarch> under /usr) and the programs' RPATH depend on it.
user:
	cmake -S . -B $(BUILD)/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	cmake --build $(BUILD)/cmake -j

# DESTDIR=... stages the install (packaging); otherwise root refreshes the
# dynamic linker's cache for the new library.
install: user
	cmake --install $(BUILD)/cmake --prefix $(PREFIX)
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig; fi

# Everything: host tests, portability builds, style, and the VM suites.
check:
	bash tools/check.sh

# Boots the test VM and shows viaduct at work.
demo:
	bash tools/demo.sh

# Boots the test VM and measures viaduct against siw (performance.rst).
bench:
	bash tools/bench.sh

# checkpatch.pl --strict and kernel-doc from the test kernel tree over the
# kernel sources.
style:
	@src=$$(bash tools/vm/kernel.sh --srcdir) && \
	$$src/scripts/checkpatch.pl --strict --no-tree --terse -f \
		kernel/*.[ch] kernel/tests/*.[ch] include/uapi/viaduct/*.h && \
	out=$$($$src/scripts/kernel-doc -none -Wall kernel/*.[ch] 2>&1) && \
	test -z "$$out" || { printf '%s\n' "$$out"; exit 1; }

format:
	find user tools -name '*.cpp' -o -name '*.hpp' -o -name '*.h' | xargs -r clang-format -i

clean:
	$(MAKE) -C $(KERNELDIR) M=$(CURDIR) clean 2>/dev/null || true
	rm -rf $(BUILD)

.PHONY: all module module-install user install check demo bench style format clean
