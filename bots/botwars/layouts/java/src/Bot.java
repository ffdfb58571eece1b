// Wanderer: a Skookum Botwars bot for matchfarm's java layout (standard library only).
//
// Protocol (stdio): the farm writes one JSON request per line on stdin,
//   {"player":"r"|"b","state":{"rows":R,"cols":C,"grid":"<R*C chars>",...},...}
// and reads exactly one line back per request, flushed: a JSON array of moves
// [{"from":i,"to":j},...]. The grid is row-major (cell i is row i / C, column
// i % C); cells holding our letter are our botlets, and each may stay (to ==
// from) or step to a 4-neighbour inside the grid. "[]" is always legal: it
// answers any line we cannot read. At end of input we exit 0. Logs go to
// stderr; stdout carries replies only.
//
// Strategy: every botlet picks uniformly among staying and its in-grid
// neighbours, with a xorshift64 generator seeded from FARM_SEED and FARM_SEAT.
// The build compiles every src/**/*.java and runs the class named in the file
// Main-Class (default: Bot).

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import wanderer.Json;

public final class Bot {
    private long state; // xorshift64: never 0

    Bot(long seed, long seat) {
        state = seed * 0x9E3779B97F4A7C15L + seat + 1;
        if (state == 0) state = 0x2545F4914F6CDD1DL;
    }

    int below(int n) {
        state ^= state << 13;
        state ^= state >>> 7;
        state ^= state << 17;
        return (int) Long.remainderUnsigned(state, n);
    }

    static long envLong(String name) {
        try {
            return Long.parseUnsignedLong(System.getenv().getOrDefault(name, "0").trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    static int size(Object value) {
        if (!(value instanceof BigDecimal number) || number.scale() > 0 || number.signum() <= 0) {
            throw new IllegalArgumentException("bad grid size " + value);
        }
        return number.intValueExact(); // throws if it is out of range
    }

    String wander(String line) {
        if (!(Json.parse(line) instanceof Map<?, ?> request) || !(request.get("state") instanceof Map<?, ?> state)) {
            throw new IllegalArgumentException("not a request object");
        }
        Object player = request.get("player");
        if (!"r".equals(player) && !"b".equals(player)) throw new IllegalArgumentException("bad player");
        int rows = size(state.get("rows")), cols = size(state.get("cols"));
        if (!(state.get("grid") instanceof String grid) || grid.length() != (long) rows * cols) {
            throw new IllegalArgumentException("the grid does not match " + rows + " x " + cols);
        }
        List<String> moves = new ArrayList<>();
        for (int cell = 0; cell < grid.length(); cell++) {
            if (grid.charAt(cell) != ((String) player).charAt(0)) continue;
            int row = cell / cols, col = cell % cols;
            List<Integer> options = new ArrayList<>(List.of(cell));
            if (row > 0) options.add(cell - cols);
            if (row < rows - 1) options.add(cell + cols);
            if (col > 0) options.add(cell - 1);
            if (col < cols - 1) options.add(cell + 1);
            moves.add("{\"from\":" + cell + ",\"to\":" + options.get(below(options.size())) + "}");
        }
        return "[" + String.join(",", moves) + "]";
    }

    public static void main(String[] args) throws IOException {
        Bot bot = new Bot(envLong("FARM_SEED"), envLong("FARM_SEAT"));
        // Bad UTF-8 is decoded as U+FFFD; replies go out through a PrintStream flushed per line.
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null; ) {
            String reply = "[]";
            try {
                reply = bot.wander(line);
            } catch (RuntimeException e) { // a bad line must never end the match
                System.err.println("wanderer: bad request: " + e.getMessage());
            }
            out.println(reply);
            out.flush();
        }
    }
}
