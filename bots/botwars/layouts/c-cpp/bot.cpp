// Wanderer: a Skookum Botwars bot for matchfarm's c-cpp layout (C++17, standard library only).
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
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "json.hpp"

namespace {

// Marsaglia's xorshift64; its state is never 0.
class XorShift64 {
  public:
    XorShift64(std::uint64_t seed, std::uint64_t seat) : state_(seed * 0x9E3779B97F4A7C15ULL + seat + 1) {
        if (state_ == 0) state_ = 0x2545F4914F6CDD1DULL;
    }
    std::size_t below(std::size_t n) {
        state_ ^= state_ << 13;
        state_ ^= state_ >> 7;
        state_ ^= state_ << 17;
        return static_cast<std::size_t>(state_ % n);
    }

  private:
    std::uint64_t state_;
};

std::uint64_t env_u64(const char* name) {
    const char* text = std::getenv(name);
    char* end = nullptr;
    unsigned long long value = text ? std::strtoull(text, &end, 10) : 0;
    return text && end != text && *end == '\0' ? value : 0;
}

// The JSON array of moves answering one request line; throws if it is malformed.
std::string wander(const std::string& line, XorShift64& rng) {
    auto values = json::flatten(line);
    auto text = [&](const std::string& path, json::Leaf::Kind kind) {
        auto it = values.find(path);
        if (it == values.end() || it->second.kind != kind) throw std::invalid_argument("no " + path);
        return it->second.text;
    };
    auto size = [&](const std::string& path) {
        std::string digits = text(path, json::Leaf::Number);
        if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos ||
            std::stoul(digits) == 0)
            throw std::invalid_argument("bad " + path);
        return std::stoul(digits);
    };
    std::string player = text("player", json::Leaf::String), grid = text("state.grid", json::Leaf::String);
    std::size_t rows = size("state.rows"), cols = size("state.cols");
    if ((player != "r" && player != "b") || grid.size() != rows * cols) throw std::invalid_argument("bad player or grid");

    std::string reply = "[";
    for (std::size_t cell = 0; cell < grid.size(); ++cell) {
        if (grid[cell] != player[0]) continue;
        std::size_t row = cell / cols, col = cell % cols;
        std::vector<std::size_t> options{cell};
        if (row > 0) options.push_back(cell - cols);
        if (row + 1 < rows) options.push_back(cell + cols);
        if (col > 0) options.push_back(cell - 1);
        if (col + 1 < cols) options.push_back(cell + 1);
        if (reply.size() > 1) reply += ',';
        reply += "{\"from\":" + std::to_string(cell) + ",\"to\":" + std::to_string(options[rng.below(options.size())]) + "}";
    }
    return reply + "]";
}

}  // namespace

int main() {
    XorShift64 rng(env_u64("FARM_SEED"), env_u64("FARM_SEAT"));
    std::ios::sync_with_stdio(false);
    for (std::string line; std::getline(std::cin, line);) {
        std::string reply = "[]";
        try {
            reply = wander(line, rng);
        } catch (const std::exception& error) {  // a bad line must never end the match
            std::cerr << "wanderer: bad request: " << error.what() << '\n';
        }
        std::cout << reply << std::endl;  // endl flushes: the farm waits for this line
    }
    return 0;
}
