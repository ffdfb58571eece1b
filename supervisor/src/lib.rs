//! The farm's container supervisor, as a library: the protocol the worker speaks with
//! it, and lines that carry file descriptors. The binary (`src/main.rs`) is PID 1 of a
//! prepared bot container: it starts a fresh bot process for each match, only when the
//! match starts, and between matches proves the container holds nothing of the last.

pub mod fds;
pub mod protocol;
