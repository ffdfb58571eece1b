/* Wanderer: a Skookum Botwars bot for matchfarm's c-cpp layout (C11, standard library only).
 *
 * Protocol (stdio): the farm writes one JSON request per line on stdin,
 *   {"player":"r"|"b","state":{"rows":R,"cols":C,"grid":"<R*C chars>",...},...}
 * and reads exactly one line back per request, flushed: a JSON array of moves
 * [{"from":i,"to":j},...]. The grid is row-major (cell i is row i / C, column
 * i % C); cells holding our letter are our botlets, and each may stay (to ==
 * from) or step to a 4-neighbour inside the grid. "[]" is always legal: it
 * answers any line we cannot read. At end of input we exit 0. Logs go to
 * stderr; stdout carries replies only.
 *
 * Strategy: every botlet picks uniformly among staying and its in-grid
 * neighbours, with a xorshift64 generator seeded from FARM_SEED and FARM_SEAT.
 */
#define _POSIX_C_SOURCE 200809L /* getline */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "request.h"

static uint64_t rng_state; /* xorshift64: never 0 */

static size_t below(size_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (size_t)(rng_state % n);
}

static uint64_t env_u64(const char *name) {
    const char *text = getenv(name);
    char *end;
    if (!text) return 0;
    unsigned long long value = strtoull(text, &end, 10);
    return end != text && *end == '\0' ? value : 0;
}

static void wander(const struct request *req) {
    long rows = req->rows, cols = req->cols;
    const char *sep = "";
    putchar('[');
    for (long cell = 0; cell < rows * cols; cell++) {
        if (req->grid[cell] != req->player) continue;
        long options[5], n = 0, row = cell / cols, col = cell % cols;
        options[n++] = cell;
        if (row > 0) options[n++] = cell - cols;
        if (row < rows - 1) options[n++] = cell + cols;
        if (col > 0) options[n++] = cell - 1;
        if (col < cols - 1) options[n++] = cell + 1;
        printf("%s{\"from\":%ld,\"to\":%ld}", sep, cell, options[below((size_t)n)]);
        sep = ",";
    }
    puts("]");
}

int main(void) {
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    rng_state = env_u64("FARM_SEED") * 0x9E3779B97F4A7C15ULL + env_u64("FARM_SEAT") + 1;
    if (rng_state == 0) rng_state = 0x2545F4914F6CDD1DULL;
    /* One request per line (of any length) until end of input: the match is over. */
    while ((length = getline(&line, &capacity, stdin)) != -1) {
        struct request req;
        if (length > 0 && line[length - 1] == '\n') line[--length] = '\0';
        /* (a NUL byte inside the line makes it shorter than read: not a request) */
        if (strlen(line) == (size_t)length && read_request(line, &req) == 0) {
            wander(&req);
            free(req.grid);
        } else {
            fprintf(stderr, "wanderer: bad request (%zd bytes)\n", length);
            puts("[]");
        }
        fflush(stdout); /* the farm waits for this line */
    }
    free(line);
    return 0;
}
