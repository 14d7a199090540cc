// SPDX-License-Identifier: GPL-2.0
/*
 * nsrun [-t SECONDS] NETNS [NAME=VALUE]... PROGRAM [ARG]...
 *
 * Runs PROGRAM in the named network namespace, as
 * "ip netns exec NETNS timeout SECONDS env NAME=VALUE... PROGRAM" does, in
 * one process start instead of up to three. The shell selftests start
 * their rdma-core and viaduct programs this way hundreds of times a run,
 * and under TCG with the debug kernel every program started costs about a
 * quarter of a second of a loaded machine (Documentation/testing.rst), so
 * the wrappers cost as much as the programs they wrapped.
 *
 * As ip-netns(8): joins /run/netns/NETNS, then, in a mount namespace of its
 * own, mounts a sysfs of the new network namespace on /sys (read-only if
 * /sys was), so that /sys/class/net shows that namespace's interfaces. It
 * does not bind /etc/netns/NETNS/ files: the selftests have none.
 *
 * With -t, as timeout(1): PROGRAM runs in a child, in a process group of
 * nsrun's own; after SECONDS the group gets SIGTERM, and SIGKILL ten
 * seconds later if it is still there, and nsrun exits 124. SIGTERM, SIGINT
 * and SIGHUP sent to nsrun are passed to PROGRAM. Otherwise the exit status
 * is PROGRAM's (128 + N if signal N killed it). Without -t, nsrun becomes
 * PROGRAM. The parent stays in NETNS, so /proc/PID/net of nsrun's pid shows
 * the namespace's sockets (tap.sh's wait_listen reads it).
 *
 * Errors of nsrun itself exit 125 (126 or 127 when PROGRAM cannot run), as
 * timeout(1) and env(1) do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define NETNS_RUN_DIR	"/run/netns"
#define KILL_AFTER	10	/* seconds from SIGTERM to SIGKILL */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* set by the handlers, read in the wait loop (volatile: see signal-safety(7)) */
static volatile sig_atomic_t pending_sig;
static volatile sig_atomic_t alarmed;

static void on_signal(int sig)
{
	if (sig == SIGALRM)
		alarmed = 1;
	else
		pending_sig = sig;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: nsrun [-t SECONDS] NETNS [NAME=VALUE]... PROGRAM [ARG]...\n");
	exit(125);
}

static int enter_netns(const char *name)
{
	char path[PATH_MAX];
	unsigned long flags = 0;
	struct statvfs sv;
	int fd;

	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		fprintf(stderr, "nsrun: invalid network namespace name '%s'\n", name);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", NETNS_RUN_DIR, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "nsrun: cannot open network namespace '%s': %s\n",
			name, strerror(errno));
		return -1;
	}
	if (setns(fd, CLONE_NEWNET) < 0) {
		fprintf(stderr, "nsrun: setting the network namespace '%s' failed: %s\n",
			name, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);

	/* A sysfs that shows this namespace's devices, seen by us only. */
	if (unshare(CLONE_NEWNS) < 0) {
		fprintf(stderr, "nsrun: unshare of the mount namespace failed: %s\n",
			strerror(errno));
		return -1;
	}
	if (mount("", "/", "none", MS_SLAVE | MS_REC, NULL) < 0) {
		fprintf(stderr, "nsrun: making / a slave mount failed: %s\n", strerror(errno));
		return -1;
	}
	if (statvfs("/sys", &sv) == 0 && (sv.f_flag & ST_RDONLY))
		flags |= MS_RDONLY;
	if (umount2("/sys", MNT_DETACH) < 0 && errno != EINVAL) {
		fprintf(stderr, "nsrun: unmounting /sys failed: %s\n", strerror(errno));
		return -1;
	}
	if (mount(name, "/sys", "sysfs", flags, NULL) < 0) {
		fprintf(stderr, "nsrun: mounting sysfs on /sys failed: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static void run(char **argv)
{
	execvp(argv[0], argv);
	fprintf(stderr, "nsrun: %s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 125;
}

static void on_child(int sig)
{
	/* only wakes sigsuspend() */
}

/* Runs argv in a child with a time limit; returns nsrun's exit status. */
static int run_limited(char **argv, unsigned int secs)
{
	static const int sigs[] = { SIGALRM, SIGTERM, SIGINT, SIGHUP };
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction sc = { .sa_handler = on_child };
	int status, timed_out = 0;
	sigset_t block, old;
	pid_t child;
	size_t i;

	/* As timeout(1): the program and what it starts form one group. */
	setpgid(0, 0);
	/*
	 * The signals stay blocked but in sigsuspend(), so none arrives
	 * between a look at the flags and the wait.
	 */
	sigemptyset(&block);
	for (i = 0; i < ARRAY_SIZE(sigs); i++) {
		sigaddset(&block, sigs[i]);
		sigaction(sigs[i], &sa, NULL);
	}
	sigaddset(&block, SIGCHLD);
	sigaction(SIGCHLD, &sc, NULL);
	sigprocmask(SIG_BLOCK, &block, &old);

	child = fork();
	if (child < 0) {
		fprintf(stderr, "nsrun: fork: %s\n", strerror(errno));
		return 125;
	}
	if (child == 0) {
		for (i = 0; i < ARRAY_SIZE(sigs); i++)
			signal(sigs[i], SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		run(argv);
	}
	alarm(secs);

	for (;;) {
		pid_t r = waitpid(child, &status, WNOHANG);

		if (r == child)
			break;
		if (r < 0) {
			fprintf(stderr, "nsrun: waitpid: %s\n", strerror(errno));
			return 125;
		}
		if (pending_sig) {
			kill(child, pending_sig);
			pending_sig = 0;
		}
		if (alarmed) {
			alarmed = 0;
			if (!timed_out) {
				/*
				 * The whole group; the SIGTERM nsrun sends
				 * itself is passed on to the child once more.
				 */
				timed_out = 1;
				kill(0, SIGTERM);
				alarm(KILL_AFTER);
			} else {
				kill(0, SIGKILL);	/* ends nsrun too: 137 */
			}
		}
		sigsuspend(&old);
	}
	return timed_out ? 124 : exit_status(status);
}

int main(int argc, char **argv)
{
	unsigned long secs = 0;
	char *end;
	int opt;

	while ((opt = getopt(argc, argv, "+t:")) != -1) {
		switch (opt) {
		case 't':
			errno = 0;
			secs = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || secs == 0 || secs > UINT_MAX) {
				fprintf(stderr, "nsrun: -t wants whole seconds above 0, not '%s'\n",
					optarg);
				return 125;
			}
			break;
		default:
			print_usage();
		}
	}
	if (argc - optind < 2)
		print_usage();
	if (enter_netns(argv[optind++]) < 0)
		return 125;
	/* NAME=VALUE words, as env(1) */
	for (; optind < argc && strchr(argv[optind], '=') && argv[optind][0] != '='; optind++) {
		if (putenv(argv[optind])) {
			fprintf(stderr, "nsrun: putenv: %s\n", strerror(errno));
			return 125;
		}
	}
	if (optind == argc)
		print_usage();
	if (!secs)
		run(argv + optind);
	return run_limited(argv + optind, secs);
}
