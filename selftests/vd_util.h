/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the viaduct selftests: opening the character device,
 * running management commands, and test interfaces.
 *
 * The tests run as root inside the test VM, with the module loaded and the
 * project's build tree visible read-only.
 */
#ifndef VD_UTIL_H
#define VD_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <viaduct/viaduct-abi.h>

#define VD_DEV_PATH "/dev/" VIADUCT_DEVICE_NAME

static inline int vd_open(void)
{
	return open(VD_DEV_PATH, O_RDWR | O_CLOEXEC);
}

/* ioctl() returning -errno on failure, 0 on success */
static inline int vd_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/*
 * The debug kernel (KASAN, lockdep, kmemleak) runs the same code several
 * times slower under TCG. Every code path still runs there; only loops
 * that repeat a path for data volume may run fewer rounds, and they say so
 * in their output (Documentation/testing.rst, "Flavours").
 */
static inline int vd_debug_flavour(void)
{
	const char *f = getenv("VD_FLAVOUR");

	return f && !strcmp(f, "debug");
}

/* @normal, or @debug in the debug flavour, with a TAP comment saying so. */
static inline unsigned long vd_scaled(unsigned long normal, unsigned long debug,
				      const char *what)
{
	if (!vd_debug_flavour() || debug >= normal)
		return normal;
	printf("# debug flavour: %s %lu instead of %lu\n", what, debug, normal);
	fflush(stdout);
	return debug;
}

static inline const char *vd_ctl_path(void)
{
	static char path[512];
	const char *env = getenv("VIADUCTCTL");

	if (env)
		return env;
	env = getenv("VD_SRC");
	if (env) {
		snprintf(path, sizeof(path),
			 "%s/build/cmake/tools/viaductctl/viaductctl", env);
		if (access(path, X_OK) == 0)
			return path;
	}
	return "viaductctl";
}

/* Runs a shell command built from a format; returns its exit status. */
static inline int vd_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Reads a small integer from a file (e.g. /sys/module/viaduct/refcnt). */
static inline long vd_read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * Swaps viaduct's module parameter @name (a file of
 * /sys/module/viaduct/parameters): returns its value, a bool's Y or N as
 * 1 or 0, or -1 if it cannot be read; then, if @set >= 0, writes @set, and
 * returns -1 if the module refused it.
 */
static inline long vd_param_swap(const char *name, long set)
{
	char path[128], word[32], *end;
	long old = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/viaduct/parameters/%s", name);
	f = fopen(path, "r+");
	if (!f)
		return -1;
	if (fscanf(f, "%31s", word) == 1) {
		if (!strcmp(word, "Y") || !strcmp(word, "N")) {
			old = word[0] == 'Y';
		} else {
			old = strtol(word, &end, 10);
			if (*end || old < 0)
				old = -1;
		}
	}
	if (old >= 0 && set >= 0) {
		rewind(f);
		if (fprintf(f, "%ld\n", set) < 0)
			old = -1;
	}
	if (fclose(f))	/* the write reaches the module here */
		old = -1;
	return old;
}

static inline long vd_module_refcnt(void)
{
	return vd_read_long("/sys/module/viaduct/refcnt");
}

/*
 * Creates a veth pair @ifname <-> @ifname"p" in the current namespace, up,
 * with 198.51.100.@host/24 on @ifname, and a viaduct device @devname on it.
 */
static inline int vd_make_device(const char *devname, const char *ifname, int host)
{
	if (vd_sh("ip link add %s type veth peer name %sp", ifname, ifname))
		return -1;
	if (vd_sh("ip link set %s up && ip link set %sp up && ip addr add 198.51.100.%d/24 dev %s",
		  ifname, ifname, host, ifname))
		return -1;
	return vd_sh("%s link add %s netdev %s >/dev/null", vd_ctl_path(), devname, ifname);
}

static inline void vd_drop_device(const char *devname, const char *ifname)
{
	vd_sh("%s link del %s >/dev/null 2>&1", vd_ctl_path(), devname);
	vd_sh("ip link del %s >/dev/null 2>&1", ifname);
}

/* Index of the device named @name as this context sees it, or -errno. */
static inline int vd_find_index(int fd, const char *name)
{
	struct viaduct_device_entry ents[64];
	struct viaduct_list_devices ld = {
		.entries = (unsigned long)ents,
		.capacity = 64,
	};
	unsigned int i;
	int ret;

	memset(ents, 0, sizeof(ents));
	ret = vd_ioctl(fd, VIADUCT_IOCTL_LIST_DEVICES, &ld);
	if (ret)
		return ret;
	for (i = 0; i < ld.count && i < 64; i++)
		if (!strcmp(ents[i].name, name))
			return (int)ents[i].index;
	return -ENODEV;
}

#endif /* VD_UTIL_H */
