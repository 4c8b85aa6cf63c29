// An LD_PRELOAD fault injector for black-box tests of the `defaults` command (FaultInjectionToolTests builds it
// with the system's C compiler and runs the command under it).
//
// It counts the file-system calls a process makes on paths that contain FAULT_PATH (and on the descriptors
// those calls opened) and, at the FAULT_NTH counted call (from 1), either fails it with FAULT_ERRNO
// (FAULT_MODE=errno) or kills the process just before it (FAULT_MODE=kill); with FAULT_STICKY=1 every later
// counted call of the same function fails too (a disk that stays full). FAULT_TRACE=<file> appends one
// line per counted call ("<n> <function> <path or fd>") so that a test learns how many calls a run makes.
// Without FAULT_PATH it does nothing. Calls on other paths (the toolchain's libraries, standard output) are
// passed through uncounted.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FD 65536

static unsigned char watched[MAX_FD];
static long counted = 0;

static const char *filter(void) {
    const char *path = getenv("FAULT_PATH");
    return path && *path ? path : NULL;
}

static int matches(const char *path) {
    const char *wanted = filter();
    return wanted && path && strstr(path, wanted) != NULL;
}

static int watched_fd(int fd) { return fd >= 0 && fd < MAX_FD && watched[fd]; }

static void trace(long n, const char *function, const char *what) {
    const char *file = getenv("FAULT_TRACE");
    if (!file) return;
    int saved = errno;
    // Through the real open and write: the trace file is not under FAULT_PATH.
    FILE *out = fopen(file, "a");
    if (out) {
        fprintf(out, "%ld %s %s\n", n, function, what);
        fclose(out);
    }
    errno = saved;
}

// Counts a call; returns 0 to go on, or -1 with errno set to fail it (and kills the process at the chosen
// call in kill mode).
static const char *sticky = NULL;

static int count(const char *function, const char *what) {
    long n = __atomic_add_fetch(&counted, 1, __ATOMIC_SEQ_CST);
    trace(n, function, what);
    const char *nth = getenv("FAULT_NTH");
    const char *repeat = getenv("FAULT_STICKY");
    int again = sticky != NULL && strcmp(sticky, function) == 0;
    if (!again && (!nth || atol(nth) != n)) return 0;
    if (repeat && *repeat == '1') sticky = function;
    const char *mode = getenv("FAULT_MODE");
    if (mode && strcmp(mode, "kill") == 0) {
        kill(getpid(), SIGKILL);
        pause();
    }
    const char *code = getenv("FAULT_ERRNO");
    errno = code ? atoi(code) : EIO;
    return -1;
}

static int count_fd(const char *function, int fd) {
    char text[32];
    snprintf(text, sizeof text, "fd:%d", fd);
    return count(function, text);
}

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*fd_fn)(int);
typedef int (*flock_fn)(int, int);
typedef int (*fchown_fn)(int, uid_t, gid_t);
typedef int (*rename_fn)(const char *, const char *);
typedef int (*path_fn)(const char *);
typedef int (*mkdir_fn)(const char *, mode_t);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef int (*stat_fn)(const char *, struct stat *);
typedef ssize_t (*readlink_fn)(const char *, char *, size_t);

// The next definition of `name` (libc's), looked up once.
#define REAL(name, type) \
    static type real_##name = NULL; \
    if (!real_##name) real_##name = (type)dlsym(RTLD_NEXT, #name)

static int opened(int fd, const char *path) {
    if (fd >= 0 && fd < MAX_FD) watched[fd] = (unsigned char)matches(path);
    return fd;
}

static int open_common(const char *function, open_fn real, const char *path, int flags, mode_t mode) {
    if (matches(path) && count(function, path) < 0) return -1;
    return opened(real(path, flags, mode), path);
}

// The mode argument of an open call, there only when its flags create a file (va_start must run in the
// variadic function itself, hence a macro).
#define MODE_ARGUMENT(flags, mode) \
    do { \
        va_list args; \
        va_start(args, flags); \
        mode = ((flags) & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0; \
        va_end(args); \
    } while (0)

int open(const char *path, int flags, ...) {
    REAL(open, open_fn);
    mode_t mode;
    MODE_ARGUMENT(flags, mode);
    return open_common("open", real_open, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    REAL(open64, open_fn);
    mode_t mode;
    MODE_ARGUMENT(flags, mode);
    return open_common("open", real_open64, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
    REAL(openat, openat_fn);
    mode_t mode;
    MODE_ARGUMENT(flags, mode);
    if (matches(path) && count("openat", path) < 0) return -1;
    return opened(real_openat(dirfd, path, flags, mode), path);
}

ssize_t write(int fd, const void *buffer, size_t size) {
    REAL(write, write_fn);
    if (watched_fd(fd) && count_fd("write", fd) < 0) return -1;
    return real_write(fd, buffer, size);
}

int fdatasync(int fd) {
    REAL(fdatasync, fd_fn);
    if (watched_fd(fd) && count_fd("fdatasync", fd) < 0) return -1;
    return real_fdatasync(fd);
}

int fsync(int fd) {
    REAL(fsync, fd_fn);
    if (watched_fd(fd) && count_fd("fsync", fd) < 0) return -1;
    return real_fsync(fd);
}

int flock(int fd, int operation) {
    REAL(flock, flock_fn);
    if (watched_fd(fd) && count_fd("flock", fd) < 0) return -1;
    return real_flock(fd, operation);
}

int fchown(int fd, uid_t owner, gid_t group) {
    REAL(fchown, fchown_fn);
    if (watched_fd(fd) && count_fd("fchown", fd) < 0) return -1;
    return real_fchown(fd, owner, group);
}

int close(int fd) {
    REAL(close, fd_fn);
    if (fd >= 0 && fd < MAX_FD) watched[fd] = 0;
    return real_close(fd);
}

int rename(const char *from, const char *to) {
    REAL(rename, rename_fn);
    if ((matches(from) || matches(to)) && count("rename", to) < 0) return -1;
    return real_rename(from, to);
}

int unlink(const char *path) {
    REAL(unlink, path_fn);
    if (matches(path) && count("unlink", path) < 0) return -1;
    return real_unlink(path);
}

int mkdir(const char *path, mode_t mode) {
    REAL(mkdir, mkdir_fn);
    if (matches(path) && count("mkdir", path) < 0) return -1;
    return real_mkdir(path, mode);
}

ssize_t read(int fd, void *buffer, size_t size) {
    REAL(read, read_fn);
    if (watched_fd(fd) && count_fd("read", fd) < 0) return -1;
    return real_read(fd, buffer, size);
}

ssize_t pread(int fd, void *buffer, size_t size, off_t offset) {
    REAL(pread, pread_fn);
    if (watched_fd(fd) && count_fd("pread", fd) < 0) return -1;
    return real_pread(fd, buffer, size, offset);
}

ssize_t pread64(int fd, void *buffer, size_t size, off_t offset) {
    REAL(pread64, pread_fn);
    if (watched_fd(fd) && count_fd("pread", fd) < 0) return -1;
    return real_pread64(fd, buffer, size, offset);
}

int stat(const char *path, struct stat *buffer) {
    REAL(stat, stat_fn);
    if (matches(path) && count("stat", path) < 0) return -1;
    return real_stat(path, buffer);
}

int lstat(const char *path, struct stat *buffer) {
    REAL(lstat, stat_fn);
    if (matches(path) && count("lstat", path) < 0) return -1;
    return real_lstat(path, buffer);
}

ssize_t readlink(const char *path, char *buffer, size_t size) {
    REAL(readlink, readlink_fn);
    if (matches(path) && count("readlink", path) < 0) return -1;
    return real_readlink(path, buffer, size);
}
