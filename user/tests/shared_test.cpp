// SPDX-License-Identifier: GPL-2.0
// Linked against libviaduct.so: a viaduct::Error thrown in the library must
// be caught here by type, with its errno and message intact.
#include <cerrno>
#include <cstdio>
#include <string>

#include <viaduct/viaduct.hpp>

int main() {
    try {
        (void)viaduct::Device::open("vd0", "/nonexistent/viaduct");
    } catch (const viaduct::Error &e) {
        std::string what = e.what();
        if (e.errnum() != ENOENT || what.find("is viaduct.ko loaded?") == std::string::npos) {
            std::fprintf(stderr, "wrong error: %d %s\n", e.errnum(), e.what());
            return 1;
        }
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "caught as std::exception only: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "open succeeded\n");
    return 1;
}
