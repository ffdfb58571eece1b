// Wanderer: a Skookum Botwars bot for matchfarm's go layout.
//
// Protocol (stdio): the farm writes one JSON request per line on stdin,
//
//	{"player":"r"|"b","state":{"rows":R,"cols":C,"grid":"<R*C chars>",...},...}
//
// and reads exactly one line back per request, flushed: a JSON array of moves
// [{"from":i,"to":j},...]. The grid is row-major (cell i is row i/C, column
// i%C); cells holding our letter are our botlets, and each may stay (to ==
// from) or step to a 4-neighbour inside the grid. "[]" is always legal: it
// answers any line we cannot read. At end of input we exit 0. Logs go to
// stderr; stdout carries replies only.
//
// Strategy: every botlet picks uniformly among staying and its in-grid
// neighbours, with a xorshift64 generator seeded from FARM_SEED and FARM_SEAT.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

type request struct {
	Player string `json:"player"`
	State  *struct {
		Rows int    `json:"rows"`
		Cols int    `json:"cols"`
		Grid string `json:"grid"`
	} `json:"state"`
}

type move struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// xorshift64 is Marsaglia's generator; its state is never 0.
type xorshift64 uint64

func (x *xorshift64) below(n int) int {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return int(uint64(*x) % uint64(n))
}

func envUint(name string) uint64 {
	value, err := strconv.ParseUint(strings.TrimSpace(os.Getenv(name)), 10, 64)
	if err != nil {
		return 0
	}
	return value
}

func wander(line []byte, rng *xorshift64) ([]move, error) {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, err
	}
	if req.Player != "r" && req.Player != "b" || req.State == nil {
		return nil, errors.New("no player or state")
	}
	rows, cols, grid := req.State.Rows, req.State.Cols, req.State.Grid
	if rows <= 0 || cols <= 0 || len(grid) != rows*cols {
		return nil, fmt.Errorf("a %d-byte grid for %d x %d", len(grid), rows, cols)
	}
	moves := []move{}
	for cell := 0; cell < len(grid); cell++ {
		if grid[cell] != req.Player[0] {
			continue
		}
		row, col := cell/cols, cell%cols
		options := []int{cell}
		if row > 0 {
			options = append(options, cell-cols)
		}
		if row < rows-1 {
			options = append(options, cell+cols)
		}
		if col > 0 {
			options = append(options, cell-1)
		}
		if col < cols-1 {
			options = append(options, cell+1)
		}
		moves = append(moves, move{From: cell, To: options[rng.below(len(options))]})
	}
	return moves, nil
}

func main() {
	rng := xorshift64(envUint("FARM_SEED")*0x9E3779B97F4A7C15 + envUint("FARM_SEAT") + 1)
	if rng == 0 {
		rng = 0x2545F4914F6CDD1D
	}
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for {
		line, readErr := in.ReadBytes('\n') // any length, unlike bufio.Scanner
		if len(line) == 0 && readErr != nil {
			return // end of input: the match is over
		}
		reply := []byte("[]")
		if moves, err := wander(line, &rng); err != nil {
			fmt.Fprintf(os.Stderr, "wanderer: bad request: %v\n", err)
		} else if encoded, err := json.Marshal(moves); err == nil {
			reply = encoded
		}
		out.Write(append(reply, '\n'))
		out.Flush()
	}
}
