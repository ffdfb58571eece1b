/* Reading a Botwars request: a small JSON reader (standard C only) that checks
 * the whole line and keeps what the bot needs. */
#ifndef WANDERER_REQUEST_H
#define WANDERER_REQUEST_H

#include <stddef.h>

struct request {
    char player;    /* 'r' or 'b' */
    long rows, cols;
    char *grid;     /* rows * cols cells, row by row; malloc'ed */
};

/* Fills *req from one request line: 0 if it is one (then free req->grid),
 * -1 if the line is not JSON or not a request. */
int read_request(const char *line, struct request *req);

#endif
