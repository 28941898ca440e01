//! Moving frames: child-process stdio (and, later, HTTP). Transports feed a `Session`.
pub mod http;
pub mod process_group;
pub mod stderr_tail;
pub mod stdio;
