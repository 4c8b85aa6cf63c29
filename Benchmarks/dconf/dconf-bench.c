/* The dconf side of the LiveDefaults benchmarks: the same operations through dconf's C client.
 *
 *   dconf-bench populate <n>                     write n integer keys under /livedefaults/<n>/ (one change set)
 *   dconf-bench read <n> <iterations> <rounds>   time reads of a present and of a missing key
 *   dconf-bench write <iterations> <sync iterations> <rounds>
 *                                                time dconf_client_write_fast (queued) and write_sync (on disk)
 *   dconf-bench signal <count>                   another process writes; time until this one's "changed" signal
 *
 * Each result is one line: "<case> <median ns> <p99 ns>". Built and run by Benchmarks/run inside a private
 * D-Bus session (dbus-run-session), so the user's own dconf database is never touched.
 */
#include <dconf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *name, double *samples, int count) {
    qsort(samples, count, sizeof(double), compare);
    int p99 = (int)(count * 0.99);
    if (p99 >= count) p99 = count - 1;
    printf("%s %.1f %.1f\n", name, samples[count / 2], samples[p99]);
    fflush(stdout);
}

static void fail(const char *what, GError *error) {
    fprintf(stderr, "dconf-bench: %s: %s\n", what, error ? error->message : "failed");
    exit(1);
}

static void populate(DConfClient *client, int n) {
    DConfChangeset *changes = dconf_changeset_new();
    char path[128];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "/livedefaults/n%d/key%d", n, i);
        dconf_changeset_set(changes, path, g_variant_new_int32(i));
    }
    GError *error = NULL;
    if (!dconf_client_change_sync(client, changes, NULL, NULL, &error)) fail("populate", error);
    dconf_changeset_unref(changes);
}

static void time_reads(DConfClient *client, int n, int iterations, int rounds) {
    char present[128], missing[128];
    snprintf(present, sizeof present, "/livedefaults/n%d/key%d", n, n / 2);
    snprintf(missing, sizeof missing, "/livedefaults/n%d/missing", n);
    const char *paths[2] = {present, missing};
    const char *names[2] = {"read", "read-missing"};
    double *samples = calloc(rounds, sizeof(double));
    for (int which = 0; which < 2; which++) {
        long sink = 0;
        for (int r = -1; r < rounds; r++) {
            uint64_t start = now();
            for (int i = 0; i < iterations; i++) {
                GVariant *value = dconf_client_read(client, paths[which]);
                if (value) {
                    sink += g_variant_get_int32(value);
                    g_variant_unref(value);
                }
            }
            if (r >= 0) samples[r] = (double)(now() - start) / iterations;
        }
        if (which == 0 && sink == 0 && n > 2) fail("read found no value", NULL);
        report(names[which], samples, rounds);
    }
    free(samples);
}

static void time_writes(DConfClient *client, int iterations, int sync_iterations, int rounds) {
    double *samples = calloc(rounds, sizeof(double));
    GError *error = NULL;
    for (int r = 0; r < rounds; r++) {
        uint64_t start = now();
        for (int i = 0; i < iterations; i++) {
            if (!dconf_client_write_fast(client, "/livedefaults/write/fast", g_variant_new_int32(i), &error)) fail("write", error);
        }
        samples[r] = (double)(now() - start) / iterations;
        dconf_client_sync(client);
    }
    report("write", samples, rounds);
    for (int r = 0; r < rounds; r++) {
        uint64_t start = now();
        for (int i = 0; i < sync_iterations; i++) {
            if (!dconf_client_write_sync(client, "/livedefaults/write/sync", g_variant_new_int32(i), NULL, NULL, &error))
                fail("write_sync", error);
        }
        samples[r] = (double)(now() - start) / sync_iterations;
    }
    report("write-sync", samples, rounds);
    free(samples);
}

/* Cross-process: the child writes value i (timestamped before the write), the parent times its "changed"
 * signal, then acknowledges so the child writes the next one. */
typedef struct {
    DConfClient *client;
    int expected;
    uint64_t arrival;
    GMainLoop *loop;
} Watch;

static void changed(DConfClient *client, const gchar *prefix, const gchar *const *changes, const gchar *tag, gpointer data) {
    Watch *watch = data;
    GVariant *value = dconf_client_read(client, "/livedefaults/signal/value");
    if (value && g_variant_get_int32(value) == watch->expected) {
        watch->arrival = now();
        g_main_loop_quit(watch->loop);
    }
    if (value) g_variant_unref(value);
}

static void signal_latency(int count) {
    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) fail("pipe", NULL);
    pid_t child = fork();
    if (child == 0) {
        DConfClient *writer = dconf_client_new();
        GError *error = NULL;
        for (int i = 1; i <= count; i++) {
            char go;
            if (read(to_child[0], &go, 1) != 1) _exit(1);
            uint64_t start = now();
            if (!dconf_client_write_sync(writer, "/livedefaults/signal/value", g_variant_new_int32(i), NULL, NULL, &error))
                fail("signal write", error);
            if (write(to_parent[1], &start, sizeof start) != sizeof start) _exit(1);
        }
        _exit(0);
    }
    Watch watch = {dconf_client_new(), 0, 0, g_main_loop_new(NULL, FALSE)};
    g_signal_connect(watch.client, "changed", G_CALLBACK(changed), &watch);
    dconf_client_watch_sync(watch.client, "/livedefaults/signal/");
    double *samples = calloc(count, sizeof(double));
    int received = 0;
    for (int i = 1; i <= count; i++) {
        watch.expected = i;
        watch.arrival = 0;
        if (write(to_child[1], "g", 1) != 1) fail("pipe write", NULL);
        uint64_t start;
        if (read(to_parent[0], &start, sizeof start) != sizeof start) fail("pipe read", NULL);
        guint timeout = g_timeout_add(2000, (GSourceFunc)g_main_loop_quit, watch.loop);
        if (!watch.arrival) g_main_loop_run(watch.loop);
        g_source_remove(timeout);
        /* A signal that arrived before the write call returned in the child still counts from its start. */
        if (watch.arrival) samples[received++] = (double)(watch.arrival - start);
    }
    waitpid(child, NULL, 0);
    if (received) report("signal", samples, received);
    printf("signal-lost %d 0\n", count - received);
    free(samples);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: dconf-bench populate|read|write|signal …\n");
        return 2;
    }
    if (strcmp(argv[1], "signal") == 0 && argc == 3) {
        signal_latency(atoi(argv[2]));
        return 0;
    }
    DConfClient *client = dconf_client_new();
    if (strcmp(argv[1], "populate") == 0 && argc == 3) {
        populate(client, atoi(argv[2]));
    } else if (strcmp(argv[1], "read") == 0 && argc == 5) {
        time_reads(client, atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    } else if (strcmp(argv[1], "write") == 0 && argc == 5) {
        time_writes(client, atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    } else {
        fprintf(stderr, "dconf-bench: bad arguments\n");
        return 2;
    }
    g_object_unref(client);
    return 0;
}
