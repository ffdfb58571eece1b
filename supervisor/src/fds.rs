//! Lines with file descriptors beside them, over a unix stream socket (`SCM_RIGHTS`).

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};

use crate::protocol::MAX_LINE;

/// The most descriptors one line carries (`start`'s three).
const MAX_FDS: usize = 3;

/// Sends `line` and its newline, with `fds` attached to its first byte.
pub fn send_line(stream: &UnixStream, line: &str, fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "too many descriptors for one line"));
    }
    let mut sent = rustix::net::sendmsg(stream, &[IoSlice::new(&bytes)], &mut control, SendFlags::NOSIGNAL)?;
    // The descriptors went with the first chunk; the rest of a long line is plain data.
    while sent < bytes.len() {
        let mut none = SendAncillaryBuffer::new(&mut []);
        sent += rustix::net::sendmsg(stream, &[IoSlice::new(&bytes[sent..])], &mut none, SendFlags::NOSIGNAL)?;
    }
    Ok(())
}

/// Sends `line` and its newline without waiting: an error (`WouldBlock`) rather than
/// a wait when the socket's buffer is full, which only a wedged peer lets happen.
pub fn try_send_line(stream: &UnixStream, line: &str) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let sent = rustix::net::send(stream, &bytes, SendFlags::NOSIGNAL | SendFlags::DONTWAIT)?;
    if sent < bytes.len() {
        return Err(io::Error::new(io::ErrorKind::WouldBlock, "the peer is not reading"));
    }
    Ok(())
}

/// Reads lines from one stream, keeping the descriptors that arrive with them.
#[derive(Debug, Default)]
pub struct LineReader {
    buffer: Vec<u8>,
    fds: Vec<OwnedFd>,
}

impl LineReader {
    /// The next line (without its newline), reading as needed; `None` at the end of
    /// the stream. A line longer than [`MAX_LINE`] or not UTF-8 is an error.
    pub fn read_line(&mut self, stream: &UnixStream) -> io::Result<Option<String>> {
        loop {
            if let Some(end) = self.buffer.iter().position(|&byte| byte == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).take(end).collect();
                return String::from_utf8(line)
                    .map(Some)
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a line that is not UTF-8"));
            }
            if self.buffer.len() > MAX_LINE {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "a line longer than the protocol allows"));
            }
            let mut chunk = [0u8; 512];
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let received = rustix::net::recvmsg(
                stream,
                &mut [IoSliceMut::new(&mut chunk)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            )?;
            for message in control.drain() {
                if let RecvAncillaryMessage::ScmRights(fds) = message {
                    self.fds.extend(fds);
                }
            }
            if received.bytes == 0 {
                return Ok(None);
            }
            self.buffer.extend_from_slice(&chunk[..received.bytes]);
        }
    }

    /// Whether a whole line is already buffered: [`LineReader::read_line`] would
    /// return it without reading the stream.
    pub fn has_line(&self) -> bool {
        self.buffer.contains(&b'\n')
    }

    /// The descriptors received so far, in order; the reader keeps none.
    pub fn take_fds(&mut self) -> Vec<OwnedFd> {
        std::mem::take(&mut self.fds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    #[test]
    fn descriptors_travel_with_their_line_and_lines_split_where_they_end() {
        let (left, right) = UnixStream::pair().expect("a socket pair");
        let (mut pipe_reader, pipe_writer) = std::io::pipe().expect("a pipe");
        send_line(&left, "start A=1", &[pipe_writer.as_fd()]).expect("sent");
        send_line(&left, "end", &[]).expect("sent");
        drop(pipe_writer);
        let mut reader = LineReader::default();
        assert_eq!(reader.read_line(&right).expect("read").as_deref(), Some("start A=1"));
        let fds = reader.take_fds();
        assert_eq!(fds.len(), 1);
        std::fs::File::from(fds.into_iter().next().expect("one")).write_all(b"through").expect("written");
        let mut text = String::new();
        pipe_reader.read_to_string(&mut text).expect("read");
        assert_eq!(text, "through");
        assert_eq!(reader.read_line(&right).expect("read").as_deref(), Some("end"));
        drop(left);
        assert_eq!(reader.read_line(&right).expect("read"), None);
    }

    #[test]
    fn an_endless_line_is_refused() {
        let (mut left, right) = UnixStream::pair().expect("a socket pair");
        left.write_all(&vec![b'x'; MAX_LINE + 600]).expect("written");
        let error = LineReader::default().read_line(&right).expect_err("too long");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }
}
