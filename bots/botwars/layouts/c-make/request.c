/* A small JSON reader for Botwars requests: see request.h. Recursive descent
 * with nesting bounded, so that a hostile line cannot overflow the stack. */
#include "request.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct { const char *p; } cursor;
typedef int member_fn(cursor *c, const char *key, void *ctx, int depth);

static int eat(cursor *c, char ch) {
    c->p += strspn(c->p, " \t\r\n");
    return *c->p == ch ? (c->p++, 1) : 0;
}

/* A string, decoded into *out (malloc'ed) if out is not NULL. */
static int string(cursor *c, char **out) {
    if (!eat(c, '"')) return -1;
    char *buf = malloc(strlen(c->p) + 1), *w = buf;
    if (!buf) return -1;
    for (;;) {
        unsigned char ch = (unsigned char)*c->p++;
        if (ch == '"') break;
        if (ch < 0x20) goto bad; /* the end of the line, or a raw control character */
        if (ch != '\\') { *w++ = (char)ch; continue; }
        const char *simple = strchr("\"\\/bfnrt", *c->p);
        if (*c->p && simple) {
            *w++ = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            c->p++;
        } else if (*c->p == 'u' && strspn(c->p + 1, "0123456789abcdefABCDEF") >= 4) {
            char hex[5] = {0};
            memcpy(hex, c->p + 1, 4);
            long code = strtol(hex, NULL, 16);
            *w++ = code < 0x80 ? (char)code : '?'; /* the farm's text is ASCII */
            c->p += 5;
        } else {
            goto bad;
        }
    }
    *w = '\0';
    if (out) *out = buf; else free(buf);
    return 0;
bad:
    free(buf);
    return -1;
}

/* A number; *integer is set when it is a whole number of digits (and fits). */
static int number(cursor *c, long *integer) {
    size_t len = strspn(c->p, "+-.eE0123456789"), digits = strspn(c->p, "0123456789");
    char *end;
    if (len == 0 || (*c->p != '-' && digits == 0)) return -1;
    strtod(c->p, &end); /* lenient: strtod's syntax decides */
    if (end != c->p + len) return -1;
    *integer = digits == len && len < 10 ? strtol(c->p, NULL, 10) : -1;
    c->p += len;
    return 0;
}

static int value(cursor *c, int depth);

/* An object: fn reads (or skips) each member's value. */
static int object(cursor *c, member_fn *fn, void *ctx, int depth) {
    if (depth > MAX_DEPTH || !eat(c, '{')) return -1;
    if (eat(c, '}')) return 0;
    do {
        char *key;
        if (string(c, &key) < 0) return -1;
        int status = eat(c, ':') ? fn(c, key, ctx, depth + 1) : -1;
        free(key);
        if (status < 0) return -1;
    } while (eat(c, ','));
    return eat(c, '}') ? 0 : -1;
}

static int skip_member(cursor *c, const char *key, void *ctx, int depth) {
    (void)key, (void)ctx;
    return value(c, depth);
}

/* Any value, checked and skipped. */
static int value(cursor *c, int depth) {
    long ignored;
    if (depth > MAX_DEPTH) return -1;
    c->p += strspn(c->p, " \t\r\n");
    if (*c->p == '{') return object(c, skip_member, NULL, depth);
    if (*c->p == '"') return string(c, NULL);
    if (eat(c, '[')) {
        if (eat(c, ']')) return 0;
        do if (value(c, depth + 1) < 0) return -1; while (eat(c, ','));
        return eat(c, ']') ? 0 : -1;
    }
    for (const char *const *word = (const char *const[]){"true", "false", "null", NULL}; *word; word++)
        if (strncmp(c->p, *word, strlen(*word)) == 0) return c->p += strlen(*word), 0;
    return number(c, &ignored);
}

/* The members of "state" we need (a repeated key: the last one counts). */
static int state_member(cursor *c, const char *key, void *ctx, int depth) {
    struct request *req = ctx;
    c->p += strspn(c->p, " \t\r\n");
    if (strcmp(key, "rows") == 0 || strcmp(key, "cols") == 0) {
        long *size = key[0] == 'r' ? &req->rows : &req->cols;
        *size = -1;
        return *c->p == '"' || *c->p == '[' || *c->p == '{' ? value(c, depth) : number(c, size);
    }
    if (strcmp(key, "grid") != 0) return value(c, depth);
    free(req->grid);
    req->grid = NULL;
    return *c->p == '"' ? string(c, &req->grid) : value(c, depth);
}

static int request_member(cursor *c, const char *key, void *ctx, int depth) {
    struct request *req = ctx;
    char *player = NULL;
    c->p += strspn(c->p, " \t\r\n");
    if (strcmp(key, "state") == 0) {
        req->rows = req->cols = -1;
        free(req->grid);
        req->grid = NULL;
        return *c->p == '{' ? object(c, state_member, req, depth) : value(c, depth);
    }
    if (strcmp(key, "player") != 0) return value(c, depth);
    req->player = 0;
    if (*c->p != '"') return value(c, depth);
    if (string(c, &player) < 0) return -1;
    req->player = strcmp(player, "r") == 0 || strcmp(player, "b") == 0 ? player[0] : 0;
    free(player);
    return 0;
}

int read_request(const char *line, struct request *req) {
    cursor c = {line};
    *req = (struct request){0, -1, -1, NULL};
    if (object(&c, request_member, req, 0) == 0 && (c.p += strspn(c.p, " \t\r\n"), *c.p == '\0') &&
        req->player && req->rows > 0 && req->cols > 0 && req->grid &&
        strlen(req->grid) == (size_t)req->rows * (size_t)req->cols)
        return 0;
    free(req->grid);
    req->grid = NULL;
    return -1;
}
