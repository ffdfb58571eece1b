// A small JSON reader: see json.hpp. Recursive descent, with nesting bounded so
// that a hostile line cannot overflow the stack.
#include "json.hpp"

#include <cstdlib>
#include <stdexcept>

namespace json {
namespace {

constexpr int kMaxDepth = 64;

class Reader {
  public:
    Reader(const std::string& text, std::map<std::string, Leaf>& out) : text_(text), out_(out) {}

    void document() {
        value("", 0);
        if (skip_space(), pos_ != text_.size()) fail("trailing characters");
    }

  private:
    [[noreturn]] void fail(const char* what) const {
        throw std::invalid_argument(std::string(what) + " at byte " + std::to_string(pos_));
    }
    void skip_space() {
        while (pos_ < text_.size() && std::string(" \t\r\n").find(text_[pos_]) != std::string::npos) ++pos_;
    }
    bool eat(char c) {
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == c) return ++pos_, true;
        return false;
    }
    void put(const std::string& path, Leaf leaf) {
        // A repeated key replaces all of the earlier value, its descendants too.
        auto it = out_.lower_bound(path);
        while (it != out_.end() && it->first.compare(0, path.size(), path) == 0 &&
               (it->first.size() == path.size() || it->first[path.size()] == '.'))
            it = out_.erase(it);
        out_[path] = std::move(leaf);
    }

    void value(const std::string& path, int depth) {
        if (depth > kMaxDepth) fail("nested too deep");
        std::string prefix = path.empty() ? "" : path + ".";
        skip_space();
        for (const char* word : {"true", "false", "null"}) {
            if (text_.compare(pos_, std::char_traits<char>::length(word), word) == 0) {
                put(path, {Leaf::Literal, word});
                pos_ += std::char_traits<char>::length(word);
                return;
            }
        }
        if (eat('[')) {
            put(path, {Leaf::Container, "["});
            if (eat(']')) return;
            int index = 0;
            do value(prefix + std::to_string(index++), depth + 1); while (eat(','));
            if (!eat(']')) fail("expected ',' or ']'");
        } else if (eat('{')) {
            put(path, {Leaf::Container, "{"});
            if (eat('}')) return;
            do {
                skip_space();
                std::string key = string();
                if (!eat(':')) fail("expected ':'");
                value(prefix + key, depth + 1);
            } while (eat(','));
            if (!eat('}')) fail("expected ',' or '}'");
        } else if (pos_ < text_.size() && text_[pos_] == '"') {
            put(path, {Leaf::String, string()});
        } else {
            const char* start = text_.c_str() + pos_;
            char* end = nullptr;
            std::strtod(start, &end);  // lenient: strtod's syntax decides
            if (end == start || !(*start == '-' || (*start >= '0' && *start <= '9'))) fail("unexpected input");
            std::size_t length = end - start;
            put(path, {Leaf::Number, text_.substr(pos_, length)});
            pos_ += length;
        }
    }

    std::string string() {
        if (!eat('"')) fail("expected a string");
        std::string out;
        while (pos_ < text_.size()) {
            char c = text_[pos_++];
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("a control character in a string");
            if (c != '\\') {
                out += c;
                continue;
            }
            char e = pos_ < text_.size() ? text_[pos_++] : '\0';
            const std::string simple = "\"\\/bfnrt", meaning = "\"\\/\b\f\n\r\t";
            if (e != '\0' && simple.find(e) != std::string::npos) {
                out += meaning[simple.find(e)];
            } else if (e == 'u' && pos_ + 4 <= text_.size() &&
                       text_.find_first_not_of("0123456789abcdefABCDEF", pos_) >= pos_ + 4) {
                long code = std::strtol(text_.substr(pos_, 4).c_str(), nullptr, 16);
                out += code < 0x80 ? static_cast<char>(code) : '?';  // the farm's text is ASCII
                pos_ += 4;
            } else {
                fail("bad escape");
            }
        }
        fail("unterminated string");
    }

    const std::string& text_;
    std::map<std::string, Leaf>& out_;
    std::size_t pos_ = 0;
};

}  // namespace

std::map<std::string, Leaf> flatten(const std::string& text) {
    std::map<std::string, Leaf> out;
    Reader(text, out).document();
    return out;
}

}  // namespace json
