//! The operating system and the CPU behind safe functions. `unsafe` code lives here, in
//! `binding/js.rs` (Node-API) and in the binding's libuv glue (`uv.rs`, `host_reader.rs`,
//! `loop_spin.rs`); `node scripts/layers.mjs --report` lists where.
#[cfg(unix)]
pub mod mapping;
#[cfg(unix)]
pub mod process;
#[cfg(target_arch = "x86_64")]
pub mod simd;
