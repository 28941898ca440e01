//! A16 `writeFrame(sink, frame)`: one frame to a writer that may throw or return promises
//! (Bun's `FileSink`, Node streams), without letting either escape.
use napi::Env;
use napi_derive::napi;

use super::js::{Js, JsArg, Thrown, Value};

/// `object[method](...args)`; a rejection of a promise it returns is swallowed.
fn call_quietly(js: Js, object: Value, method: &str, args: &[Value]) -> Result<(), Thrown> {
  let function = js.get(object, method)?;
  let returned = js.call(function, object, args)?;
  let then = js
    .is_record(returned)
    .then(|| js.get(returned, "then").ok())
    .flatten()
    .filter(|then| js.is_function(*then));
  if let Some(then) = then {
    let ignore = js.closure("ignore", |js, _| Ok(js.undefined()))?;
    js.call(then, returned, &[js.undefined(), ignore])?;
  }
  Ok(())
}

/// Writes `frame` and flushes: `false` when either throws (no flush after a failed write).
#[napi(
  js_name = "writeFrame",
  ts_args_type = "sink: { write(chunk: string): unknown; flush(): unknown }, frame: string"
)]
pub fn write_frame(env: Env, sink: JsArg, frame: JsArg) -> bool {
  let js = Js::new(env.raw());
  // What was thrown is not rethrown: the caller only learns that the frame did not go out.
  call_quietly(js, sink.0, "write", &[frame.0])
    .and_then(|()| call_quietly(js, sink.0, "flush", &[]))
    .is_ok()
}
