//! A small JSON reader (standard library only), enough for the farm's requests:
//! it checks the whole text and builds a tree. Nesting is bounded, so that a
//! hostile line cannot overflow the stack.

#[allow(dead_code)] // a general reader: the bot looks at only some of what it reads
pub enum Value {
    /// `true`, `false` or `null`.
    Literal(&'static str),
    /// A number's literal text, for the reader to parse as the type it wants.
    Number(String),
    Str(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object (the last one when repeated).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

const MAX_DEPTH: usize = 64;

pub fn parse(text: &str) -> Result<Value, String> {
    let mut parser = Parser { text, at: 0 };
    let value = parser.value(0)?;
    parser.skip_space();
    if parser.at != text.len() {
        return Err(format!("trailing characters at byte {}", parser.at));
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        self.at += self.text[self.at..].bytes().take_while(|b| b" \t\n\r".contains(b)).count();
    }

    /// Skips white space, then consumes `byte` if it comes next.
    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let found = self.text.as_bytes().get(self.at) == Some(&byte);
        self.at += found as usize;
        found
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        self.skip_space();
        let rest = &self.text[self.at..];
        if depth > MAX_DEPTH {
            Err("nested too deep".to_string())
        } else if let Some(word) = ["true", "false", "null"].into_iter().find(|word| rest.starts_with(word)) {
            self.at += word.len();
            Ok(Value::Literal(word))
        } else if rest.starts_with('"') {
            self.string().map(Value::Str)
        } else if rest.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
            // Lenient on form (Rust's float syntax decides), strict on content.
            let len = rest.bytes().take_while(|b| b"+-.eE0123456789".contains(b)).count();
            self.at += len;
            rest[..len].parse::<f64>().map(|_| Value::Number(rest[..len].to_string())).map_err(|e| e.to_string())
        } else if rest.starts_with(['[', '{']) {
            let (object, close) = if rest.starts_with('{') { (true, b'}') } else { (false, b']') };
            self.at += 1;
            let (mut items, mut members) = (Vec::new(), Vec::new());
            if !self.eat(close) {
                loop {
                    if object {
                        self.skip_space();
                        let key = self.string()?;
                        if !self.eat(b':') {
                            return Err(format!("expected ':' at byte {}", self.at));
                        }
                        members.push((key, self.value(depth + 1)?));
                    } else {
                        items.push(self.value(depth + 1)?);
                    }
                    if self.eat(close) {
                        break;
                    } else if !self.eat(b',') {
                        return Err(format!("expected ',' or '{}' at byte {}", close as char, self.at));
                    }
                }
            }
            Ok(if object { Value::Object(members) } else { Value::Array(items) })
        } else {
            Err(format!("unexpected input at byte {}", self.at))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        let mut chars = self.text[self.at..].char_indices().peekable();
        if chars.next().map(|(_, c)| c) != Some('"') {
            return Err(format!("expected a string at byte {}", self.at));
        }
        let mut out = String::new();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next().map(|(_, e)| e) {
                    Some('u') => {
                        let hex: String = (0..4)
                            .filter_map(|_| chars.next_if(|(_, h)| h.is_ascii_hexdigit()))
                            .map(|(_, h)| h)
                            .collect();
                        let code =
                            u32::from_str_radix(&hex, 16).ok().filter(|_| hex.len() == 4).ok_or("bad \\u escape")?;
                        // A lone surrogate half is no char: replaced, as a lenient decoder does.
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    Some(e) => match "\"\\/bfnrt".find(e) {
                        Some(k) => out.push(['"', '\\', '/', '\u{8}', '\u{c}', '\n', '\r', '\t'][k]),
                        None => return Err(format!("bad escape \\{e}")),
                    },
                    None => break,
                },
                c if c < ' ' => return Err("a control character in a string".to_string()),
                c => out.push(c),
            }
        }
        Err("unterminated string".to_string())
    }
}
