//! Writing the engine's documents into a caller's buffer: JSON values, integers and
//! strings byte for byte as serde_json writes them, and protocol text. Every game's
//! codec, the [`Game`](crate::Game) trait and the replay's frames write through here.

use serde::Serialize;

/// The text a writer of [`Game`](crate::Game) appends to an empty buffer. The writers write UTF-8
/// (JSON from serde_json, or ASCII protocol text), so nothing is ever replaced.
pub(crate) fn text_of(write: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    write(&mut out);
    String::from_utf8(out).unwrap_or_else(|bad| String::from_utf8_lossy(bad.as_bytes()).into_owned())
}

/// Appends `value` to `out` as JSON. The engine's documents are structs of strings,
/// integers and booleans, and writing to a `Vec` cannot fail, so neither can this.
pub(crate) fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    if let Err(error) = serde_json::to_writer(&mut *out, value) {
        unreachable!("an engine document does not serialize: {error}");
    }
}

/// Appends the integer `value` to `out` in decimal, as JSON writes it.
pub(crate) fn write_int(out: &mut Vec<u8>, value: impl itoa::Integer) {
    // Byte by byte: the numbers of a state are a few digits, for which a copy of a
    // slice of unknown length costs more than the digits.
    for &digit in itoa::Buffer::new().format(value).as_bytes() {
        out.push(digit);
    }
}

/// Appends `text` to `out` as a JSON string, byte for byte as serde_json writes it:
/// `"` and `\\` escaped, the C0 controls as `\b` `\t` `\n` `\f` `\r` or `\u00xx`
/// (lower-case hex), everything else as it is. The replies of every frame go through
/// here; a Botwars reply has a quote every few bytes, so it goes byte by byte through
/// a table rather than copying the runs between escapes.
pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) {
    /// What follows the backslash of each byte's escape; 0: the byte stands as it is.
    const ESCAPE: [u8; 256] = {
        let mut table = [0u8; 256];
        let mut byte = 0;
        while byte < 0x20 {
            table[byte] = b'u';
            byte += 1;
        }
        table[0x08] = b'b';
        table[0x09] = b't';
        table[0x0a] = b'n';
        table[0x0c] = b'f';
        table[0x0d] = b'r';
        table[b'"' as usize] = b'"';
        table[b'\\' as usize] = b'\\';
        table
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(text.len() + 2);
    out.push(b'"');
    for &byte in text.as_bytes() {
        match ESCAPE[usize::from(byte)] {
            0 => out.push(byte),
            b'u' => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]),
            escape => out.extend_from_slice(&[b'\\', escape]),
        }
    }
    out.push(b'"');
}
