//! The operating system and the CPU behind safe functions. `unsafe` code lives here, in
//! `binding/js.rs` (Node-API) and in `binding/uv.rs` (the libuv glue), nowhere else;
//! `node scripts/layers.mjs --report` lists where.
#[cfg(unix)]
pub mod mapping;
#[cfg(unix)]
pub mod process;
#[cfg(target_arch = "x86_64")]
pub mod simd;
