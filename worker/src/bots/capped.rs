use tokio::io::{AsyncRead, AsyncReadExt};

/// A bot's log as kept: the first `cap` bytes, and how many more were dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CappedLog {
    /// The bytes kept.
    pub bytes: Vec<u8>,
    /// Bytes written past the cap and dropped.
    pub dropped: u64,
}

impl CappedLog {
    /// Appends `bytes`, keeping at most `cap` bytes in all and counting the rest.
    pub fn append(&mut self, bytes: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.bytes.len()).min(bytes.len());
        self.bytes.extend_from_slice(&bytes[..room]);
        self.dropped += (bytes.len() - room) as u64;
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
        assert_eq!(read_capped(input, 4).await, CappedLog { bytes: b"0123".to_vec(), dropped: 6 });
        assert_eq!(read_capped(input, 64).await, CappedLog { bytes: input.to_vec(), dropped: 0 });
    }
}
