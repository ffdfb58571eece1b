package wanderer;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader (standard library only), enough for the farm's requests. It checks the
 * whole text and gives Map (object), List (array), String, BigDecimal (number), Boolean or
 * null. Nesting is bounded, so that a hostile line cannot overflow the stack.
 */
public final class Json {
    private static final int MAX_DEPTH = 64;
    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /** Parses a whole JSON text; IllegalArgumentException if it is not one. */
    public static Object parse(String text) {
        Json json = new Json(text);
        Object value = json.value(0);
        json.skipSpace();
        if (json.at != text.length()) throw json.error("trailing characters");
        return value;
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException(what + " at character " + at);
    }

    private void skipSpace() {
        while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) at++;
    }

    private boolean eat(char c) {
        skipSpace();
        boolean found = at < text.length() && text.charAt(at) == c;
        if (found) at++;
        return found;
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) throw error("nested too deep");
        skipSpace();
        for (String word : new String[] {"true", "false", "null"}) {
            if (text.startsWith(word, at)) {
                at += word.length();
                return word.equals("null") ? null : Boolean.valueOf(word);
            }
        }
        if (eat('[')) {
            List<Object> items = new ArrayList<>();
            if (eat(']')) return items;
            do items.add(value(depth + 1)); while (eat(','));
            if (!eat(']')) throw error("expected ',' or ']'");
            return items;
        }
        if (eat('{')) {
            Map<String, Object> members = new HashMap<>();
            if (eat('}')) return members;
            do {
                skipSpace();
                String key = string();
                if (!eat(':')) throw error("expected ':'");
                members.put(key, value(depth + 1)); // the last of repeated keys wins
            } while (eat(','));
            if (!eat('}')) throw error("expected ',' or '}'");
            return members;
        }
        if (at < text.length() && text.charAt(at) == '"') return string();
        int start = at;
        while (at < text.length() && "+-.eE0123456789".indexOf(text.charAt(at)) >= 0) at++;
        try {
            return new BigDecimal(text.substring(start, at)); // lenient: BigDecimal's syntax decides
        } catch (NumberFormatException e) {
            throw error("unexpected input");
        }
    }

    private String string() {
        if (at >= text.length() || text.charAt(at) != '"') throw error("expected a string");
        StringBuilder out = new StringBuilder();
        for (at++; at < text.length(); at++) {
            char c = text.charAt(at);
            if (c == '"') {
                at++;
                return out.toString();
            } else if (c < ' ') {
                throw error("a control character in a string");
            } else if (c != '\\') {
                out.append(c);
            } else if (++at < text.length() && text.charAt(at) == 'u' && at + 4 < text.length()) {
                String hex = text.substring(at + 1, at + 5);
                if (!hex.matches("[0-9a-fA-F]{4}")) throw error("bad \\u escape");
                out.append((char) Integer.parseInt(hex, 16));
                at += 4;
            } else {
                int k = at < text.length() ? "\"\\/bfnrt".indexOf(text.charAt(at)) : -1;
                if (k < 0) throw error("bad escape");
                out.append("\"\\/\b\f\n\r\t".charAt(k));
            }
        }
        throw error("unterminated string");
    }
}
