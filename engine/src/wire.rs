//! How observations and replies travel: the `stdio` and `http` transports.
//!
//! Every game's observation is one line of text (JSON for the JSON games), except
//! Maze's, which is the original's several lines (the bot knows how many to read from
//! the entity count). The codecs are shared: on stdio a request is the observation
//! plus `\n` and a reply is one line back; over HTTP the request is the body of
//! `POST /` and the reply is the response body.

use crate::BotReply;

/// The largest reply the farm reads; anything longer is [`BotReply::Unreadable`].
pub const MAX_REPLY_BYTES: usize = farm_proto::limits::MAX_REPLY_BYTES;

/// A request for the `http` transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The body of `POST /`.
    pub body: Vec<u8>,
}

/// How the `http` transport encodes a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpBody {
    /// The observation itself, as `application/json`.
    #[default]
    Json,
    /// `data=<observation>\n`, form-urlencoded, as original Skookum Botwars bots expect.
    LegacyForm,
}

/// The stdio request: the observation followed by a newline.
pub fn stdio_request(observation: &str) -> Vec<u8> {
    let mut line = Vec::with_capacity(observation.len() + 1);
    line.extend_from_slice(observation.as_bytes());
    line.push(b'\n');
    line
}

/// The HTTP request for `observation`.
pub fn http_request(observation: &str, body: HttpBody) -> HttpRequest {
    match body {
        HttpBody::Json => HttpRequest { content_type: "application/json", body: observation.as_bytes().to_vec() },
        HttpBody::LegacyForm => {
            let mut encoded = String::from("data=");
            form_urlencode(&format!("{observation}\n"), &mut encoded);
            HttpRequest { content_type: "application/x-www-form-urlencoded", body: encoded.into_bytes() }
        }
    }
}

fn form_urlencode(text: &str, out: &mut String) {
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => out.push(char::from(byte)),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
}

/// A reply read from a stdio line (without its `\n`) or from an HTTP response body.
/// A trailing `\r` or `\n` is dropped; bytes that are not UTF-8, or more than
/// [`MAX_REPLY_BYTES`], are [`BotReply::Unreadable`].
pub fn reply_from_bytes(bytes: &[u8]) -> BotReply {
    if bytes.len() > MAX_REPLY_BYTES {
        return BotReply::Unreadable;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => BotReply::Line(text.trim_end_matches(['\r', '\n']).to_owned()),
        Err(_) => BotReply::Unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_request_is_one_line() {
        assert_eq!(stdio_request("{\"a\":1}"), b"{\"a\":1}\n");
    }

    #[test]
    fn a_multi_line_observation_goes_out_as_its_lines_plus_one_newline() {
        // Maze: the hero line, the entity count, the entity lines.
        assert_eq!(stdio_request("1 2 20 0 5 5 5\n1\n3 3 1 -1"), b"1 2 20 0 5 5 5\n1\n3 3 1 -1\n");
    }

    #[test]
    fn legacy_form_wraps_the_json_in_a_data_field() {
        let request = http_request("{\"player\":\"r\"}", HttpBody::LegacyForm);
        assert_eq!(request.content_type, "application/x-www-form-urlencoded");
        assert_eq!(String::from_utf8(request.body).expect("ascii"), "data=%7B%22player%22%3A%22r%22%7D%0A");
        assert_eq!(http_request("{}", HttpBody::Json).body, b"{}");
    }

    #[test]
    fn replies_drop_line_endings_and_reject_binary_or_huge_input() {
        assert_eq!(reply_from_bytes(b"North\r\n"), BotReply::Line("North".into()));
        assert_eq!(reply_from_bytes(&[0xff, 0xfe]), BotReply::Unreadable);
        assert_eq!(reply_from_bytes(&vec![b'a'; MAX_REPLY_BYTES + 1]), BotReply::Unreadable);
    }
}
