use tokio::io::{AsyncRead, AsyncReadExt};

/// A bot's log as kept: the first `cap` bytes, how many more were dropped, and the
/// last [`TAIL_BYTES`] whatever the cap (a crash report's stderr tail: a bot that
/// floods its log still shows how it ended).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CappedLog {
    /// The bytes kept.
    pub bytes: Vec<u8>,
    /// Bytes written past the cap and dropped.
    pub dropped: u64,
    /// The last bytes written (past the cap too), at most [`TAIL_BYTES`].
    tail: std::collections::VecDeque<u8>,
    /// Whether `tail` begins inside a line (what came before it was dropped).
    tail_cut_mid_line: bool,
}

/// Bytes of a log's end kept beside its head: room for 20 lines of a few hundred
/// characters.
pub const TAIL_BYTES: usize = 8 * 1024;

impl CappedLog {
    /// Appends `bytes`, keeping at most `cap` bytes in all and counting the rest.
    pub fn append(&mut self, bytes: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.bytes.len()).min(bytes.len());
        self.bytes.extend_from_slice(&bytes[..room]);
        self.dropped += (bytes.len() - room) as u64;
        let from = bytes.len().saturating_sub(TAIL_BYTES);
        let kept = &bytes[from..];
        let excess = (self.tail.len() + kept.len()).saturating_sub(TAIL_BYTES);
        // The byte just before the kept end says whether it begins a line.
        if from > 0 {
            self.tail_cut_mid_line = bytes[from - 1] != b'\n';
        } else if excess > 0 {
            self.tail_cut_mid_line = self.tail[excess - 1] != b'\n';
        }
        self.tail.drain(..excess);
        self.tail.extend(kept);
    }

    /// Its last `count` lines, each cut at `chars` characters (invalid UTF-8
    /// replaced); a first line the kept end began inside of is left out, unless it is
    /// the only one.
    pub fn last_lines(&self, count: usize, chars: usize) -> Vec<String> {
        let (front, back) = self.tail.as_slices();
        let text = String::from_utf8_lossy(&[front, back].concat()).into_owned();
        let mut lines: Vec<&str> = text.lines().collect();
        if self.tail_cut_mid_line && lines.len() > 1 {
            lines.remove(0);
        }
        let from = lines.len().saturating_sub(count);
        lines[from..].iter().map(|line| line.chars().take(chars).collect()).collect()
    }
}

/// Reads `stream` to its end, keeping at most `cap` bytes. It keeps reading past the
/// cap so that a bot flooding its log never blocks on a full pipe.
pub async fn read_capped(mut stream: impl AsyncRead + Unpin, cap: usize) -> CappedLog {
    let mut log = CappedLog::default();
    let mut chunk = vec![0u8; 8192];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return log,
            Ok(n) => log.append(&chunk[..n], cap),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_first_bytes_and_counts_the_rest() {
        let input: &[u8] = b"0123456789";
        let head = read_capped(input, 4).await;
        assert_eq!((head.bytes.as_slice(), head.dropped), (&b"0123"[..], 6));
        let whole = read_capped(input, 64).await;
        assert_eq!((whole.bytes.as_slice(), whole.dropped), (input, 0));
    }

    #[tokio::test]
    async fn keeps_the_last_lines_past_the_cap() {
        let flood: String = (0..10_000).map(|n| format!("line {n}\n")).collect();
        let log = read_capped(format!("{flood}the end, no newline").as_bytes(), 100).await;
        assert_eq!(log.bytes.len(), 100);
        let last = log.last_lines(3, 300);
        assert_eq!(last, ["line 9998", "line 9999", "the end, no newline"]);
        // The whole kept end: no line cut at its start.
        assert!(
            log.last_lines(10_000, 300).iter().all(|line| line.starts_with("line ") || line.starts_with("the end"))
        );
        // A kept end that begins on a line boundary keeps its first line; one line
        // longer than the kept end is kept, cut.
        let exact: String = (0..TAIL_BYTES / 8).map(|n| format!("{:07}\n", n % 10_000_000)).collect();
        let log = read_capped(format!("{}\n{exact}", "x".repeat(99)).as_bytes(), 10).await;
        assert_eq!(log.last_lines(usize::MAX, 300).len(), TAIL_BYTES / 8);
        let log = read_capped("y".repeat(3 * TAIL_BYTES).as_bytes(), 10).await;
        assert_eq!(log.last_lines(20, 300), ["y".repeat(300)]);
        // Short logs keep every line; long lines are cut.
        let short = read_capped(&b"one\ntwo\n"[..], 64).await;
        assert_eq!(short.last_lines(20, 300), ["one", "two"]);
        assert_eq!(short.last_lines(20, 2), ["on", "tw"]);
        assert!(CappedLog::default().last_lines(20, 300).is_empty());
    }
}
