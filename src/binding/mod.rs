//! The napi binding layer: converts values and bridges callbacks and signals. No protocol
//! logic lives here.
mod args;
mod calls;
mod js;
mod js_error;
mod pump;
mod stdio;
