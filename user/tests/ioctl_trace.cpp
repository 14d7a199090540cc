// SPDX-License-Identifier: GPL-2.0
#include "ioctl_trace.hpp"

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <sys/ioctl.h>
#include <thread>

#include <viaduct/viaduct-abi.h>

namespace viaduct::test {

namespace {

std::atomic<bool> recording{false};
std::atomic<unsigned long> delayed_cmd{0};
std::atomic<long> delay_us{0};
std::mutex calls_lock;
std::vector<IoctlCall> recorded;

using IoctlFn = int (*)(int, unsigned long, ...);

IoctlFn real_ioctl() {
    static IoctlFn fn = [] {
        void *sym = ::dlsym(RTLD_NEXT, "ioctl");
        IoctlFn f = nullptr;
        static_assert(sizeof(f) == sizeof(sym));
        std::memcpy(&f, &sym, sizeof(f));
        return f;
    }();
    return fn;
}

bool is_viaduct(unsigned long cmd) {
    return _IOC_TYPE(cmd) == VIADUCT_IOCTL_MAGIC;
}

} // namespace

IoctlTrace::IoctlTrace() {
    std::lock_guard<std::mutex> guard(calls_lock);
    recorded.clear();
    recording.store(true);
}

IoctlTrace::~IoctlTrace() {
    recording.store(false);
}

IoctlDelay::IoctlDelay(unsigned long cmd, std::chrono::microseconds delay) {
    delay_us.store(static_cast<long>(delay.count()));
    delayed_cmd.store(cmd);
}

IoctlDelay::~IoctlDelay() {
    delayed_cmd.store(0);
}

std::vector<IoctlCall> IoctlTrace::calls() const {
    std::lock_guard<std::mutex> guard(calls_lock);
    return recorded;
}

std::size_t IoctlTrace::count(unsigned long cmd) const {
    std::size_t n = 0;
    for (const IoctlCall &c : calls())
        n += c.cmd == cmd;
    return n;
}

} // namespace viaduct::test

extern "C" int ioctl(int fd, unsigned long cmd, ...) noexcept {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    using namespace viaduct::test;
    const bool rec = recording.load() && is_viaduct(cmd);
    IoctlCall c;
    if (rec && arg && _IOC_SIZE(cmd) >= sizeof(std::uint32_t) && (_IOC_DIR(cmd) & _IOC_WRITE))
        std::memcpy(&c.handle, arg, sizeof(c.handle));
    int ret = real_ioctl()(fd, cmd, arg);
    const int saved = errno;
    if (cmd == delayed_cmd.load())
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us.load()));
    if (rec) {
        c.fd = fd;
        c.cmd = cmd;
        c.ret = ret;
        c.err = ret < 0 ? saved : 0;
        std::lock_guard<std::mutex> guard(calls_lock);
        recorded.push_back(c);
    }
    errno = saved;
    return ret;
}
