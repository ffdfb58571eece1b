// A small JSON reader (standard library only), enough for the farm's requests.
#pragma once

#include <map>
#include <string>

namespace json {

// A scalar of a JSON text: its kind and text (a string's decoded content, or a
// number's or literal's spelling).
struct Leaf {
    enum Kind { String, Number, Literal, Container } kind;
    std::string text;
};

// Every value of a JSON text by its path: "" for the top, "state" for the
// member state of the top object, "state.rows" below it, "moves.0" for an
// array's first item (keys holding a dot are ambiguous: the farm sends none).
// A container is a Leaf of kind Container. Throws std::invalid_argument if the
// text is not JSON (or is nested too deep).
std::map<std::string, Leaf> flatten(const std::string& text);

}  // namespace json
