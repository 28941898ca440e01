//! The operating system and the CPU behind safe functions. With `binding/js.rs` (Node-API)
//! this is the only place with `unsafe` code; everything else calls these.
#[cfg(unix)]
pub mod mapping;
#[cfg(unix)]
pub mod process;
#[cfg(target_arch = "x86_64")]
pub mod simd;
