//! Raw napi calls behind a small vocabulary. Every function here runs on the JS thread.
//!
//! Where napi-rs's safe types cost nothing measurable the binding uses them (classes,
//! `Env`, `#[napi]` exports). Raw calls stay where they measured better or where the safe
//! type does the wrong thing:
//! - `JsArg`/`JsRaw`: loose arguments, validated by hand, because napi-rs's typed
//!   conversion throws synchronously and a promise-returning export must reject (E2);
//! - results as JSON text through V8's `JSON.parse` (`json_parse`), 2–4× faster than
//!   building objects through napi for anything object-shaped (NAPI-NOTES, boundary cost);
//! - external Latin-1 strings (`external_latin1`) for megabyte results, not offered by
//!   napi-rs, so a 10 MiB answer is not copied on the JS thread;
//! - one raw threadsafe function per transport (`Tsfn`), called with no data (napi-rs's
//!   `ThreadsafeFunction` boxes a value for every call) and referenced only while requests
//!   are pending.
use std::borrow::Cow;
use std::ffi::{c_char, c_void, CString};
use std::mem::MaybeUninit;
use std::ptr;

use bytes::Bytes;
use napi::sys;

pub type Value = sys::napi_value;
/// Bytes of stack a string is read into before the heap is tried (`Js::str_in`).
pub const STACK_STRING: usize = 1024;

/// Stack room a string is read into (`Js::str_in`). Left uninitialised: only the bytes
/// Node-API writes are read.
pub type Room<const N: usize> = [MaybeUninit<u8>; N];

pub fn room<const N: usize>() -> Room<N> {
  [MaybeUninit::uninit(); N]
}
/// Node-API's 128-bit object tag.
pub type TypeTag = sys::napi_type_tag;

/// Strings at least this long are handed to V8 as external strings where possible: below it
/// the copy is cheaper than the finalizer bookkeeping.
pub const EXTERNAL_STRING_BYTES: usize = 64 * 1024;

type CreateExternalLatin1 = unsafe extern "C" fn(
  sys::napi_env,
  *mut std::ffi::c_char,
  usize,
  sys::napi_finalize,
  *mut c_void,
  *mut Value,
  *mut bool,
) -> sys::napi_status;

/// Node has this since 20.4 (as an experimental API, hence looked up at run time); Bun may
/// not, and then strings are copied.
#[cfg(unix)]
fn external_latin1_function() -> Option<CreateExternalLatin1> {
  static FUNCTION: std::sync::OnceLock<Option<CreateExternalLatin1>> = std::sync::OnceLock::new();
  *FUNCTION.get_or_init(|| {
    let name = c"node_api_create_external_string_latin1";
    // SAFETY: dlsym with RTLD_DEFAULT only looks a symbol up; a non-null result is that
    // function, whose C signature CreateExternalLatin1 matches.
    let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    // SAFETY: as above, a non-null symbol is a function of exactly that signature.
    let function =
      |symbol| unsafe { std::mem::transmute::<*mut c_void, CreateExternalLatin1>(symbol) };
    (!symbol.is_null()).then(|| function(symbol))
  })
}

#[cfg(not(unix))]
fn external_latin1_function() -> Option<CreateExternalLatin1> {
  None
}

unsafe extern "C" fn release_external(env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
  // SAFETY: hint is the Box<Bytes> leaked in external_latin1, released exactly once.
  let text = unsafe { Box::from_raw(hint.cast::<Bytes>()) };
  external_memory::released(env, text.len());
  // Unmapping megabytes takes a while; a collection on the JS thread should not wait for it.
  match crate::runtime::handle() {
    Some(runtime) => drop(runtime.spawn_blocking(move || drop(text))),
    None => drop(text),
  }
}

/// What external strings hold, told to the engine so that it collects them as eagerly as the
/// strings it copies itself: otherwise a string of ours weighs nothing to the GC, and dropped
/// multi-megabyte results pile up until something else triggers a collection.
mod external_memory {
  use std::collections::BTreeMap;
  use std::sync::Mutex;

  use napi::sys;

  /// Bytes freed per env since its last report. Finalizers may run inside a collection, so
  /// they only note the release; the next report, from ordinary JS-thread code, includes it.
  static RELEASED: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

  pub fn released(env: sys::napi_env, bytes: usize) {
    if let Ok(mut released) = RELEASED.lock() {
      *released.entry(env as usize).or_default() += bytes;
    }
  }

  pub fn adopted(env: sys::napi_env, bytes: usize) {
    let freed = RELEASED
      .lock()
      .ok()
      .and_then(|mut released| released.remove(&(env as usize)))
      .unwrap_or(0);
    let change = bytes as i64 - freed as i64;
    let mut total = 0;
    // SAFETY: called on the JS thread of a live env, outside any finalizer.
    unsafe { sys::napi_adjust_external_memory(env, change, &mut total) };
  }
}

/// An exception thrown by JS code we called (or by the engine).
pub struct Thrown(pub Value);

#[derive(Clone, Copy)]
pub enum ErrorKind {
  Error,
  TypeError,
  SyntaxError,
}

impl ErrorKind {
  fn constructor(self) -> &'static str {
    match self {
      ErrorKind::Error => "Error",
      ErrorKind::TypeError => "TypeError",
      ErrorKind::SyntaxError => "SyntaxError",
    }
  }
}

#[derive(Clone, Copy)]
pub struct Js {
  pub env: sys::napi_env,
}

/// `name` NUL-terminated for Node-API, handed to `use_name`. Property names are short:
/// they are copied to the stack instead of a fresh allocation per property read.
fn with_c_name<T>(name: &str, use_name: impl FnOnce(*const c_char) -> T) -> T {
  let mut short = [0u8; 64];
  if name.len() < short.len() && !name.as_bytes().contains(&0) {
    short[..name.len()].copy_from_slice(name.as_bytes());
    return use_name(short.as_ptr().cast());
  }
  // A name with a NUL in it reads the empty name, as before.
  let owned = CString::new(name).unwrap_or_default();
  use_name(owned.as_ptr())
}

impl Js {
  pub fn new(env: sys::napi_env) -> Self {
    Js { env }
  }

  fn check(&self, status: sys::napi_status) -> Result<(), Thrown> {
    if status == sys::Status::napi_ok {
      return Ok(());
    }
    let mut pending = false;
    // SAFETY: env is the live env of the current JS-thread call.
    unsafe { sys::napi_is_exception_pending(self.env, &mut pending) };
    if pending {
      let mut exception = ptr::null_mut();
      // SAFETY: as above; an exception is pending, so `exception` receives it.
      unsafe { sys::napi_get_and_clear_last_exception(self.env, &mut exception) };
      return Err(Thrown(exception));
    }
    Err(Thrown(self.error(
      ErrorKind::Error,
      &format!("Node-API call failed (status {status})"),
    )))
  }

  pub fn undefined(&self) -> Value {
    let mut v = ptr::null_mut();
    // SAFETY: env is the live env of this JS-thread call; `v` is a valid out slot.
    unsafe { sys::napi_get_undefined(self.env, &mut v) };
    v
  }

  pub fn null(&self) -> Value {
    let mut v = ptr::null_mut();
    // SAFETY: env is the live env of this JS-thread call; `v` is a valid out slot.
    unsafe { sys::napi_get_null(self.env, &mut v) };
    v
  }

  pub fn boolean(&self, b: bool) -> Value {
    let mut v = ptr::null_mut();
    // SAFETY: env is the live env of this JS-thread call; `v` is a valid out slot.
    unsafe { sys::napi_get_boolean(self.env, b, &mut v) };
    v
  }

  pub fn object(&self) -> Result<Value, Thrown> {
    let mut v = ptr::null_mut();
    // SAFETY: env is the live env of this JS-thread call; `v` is a valid out slot.
    self.check(unsafe { sys::napi_create_object(self.env, &mut v) })?;
    Ok(v)
  }

  pub fn array(&self, length: usize) -> Result<Value, Thrown> {
    let mut v = ptr::null_mut();
    // SAFETY: env is the live env of this JS-thread call; `v` is a valid out slot.
    self.check(unsafe { sys::napi_create_array_with_length(self.env, length, &mut v) })?;
    Ok(v)
  }

  pub fn set_element(&self, array: Value, index: u32, value: Value) -> Result<(), Thrown> {
    // SAFETY: array and value are values of the current scope of this env.
    self.check(unsafe { sys::napi_set_element(self.env, array, index, value) })
  }

  pub fn set_property(&self, object: Value, key: Value, value: Value) -> Result<(), Thrown> {
    // SAFETY: object, key and value are values of the current scope of this env.
    self.check(unsafe { sys::napi_set_property(self.env, object, key, value) })
  }

  pub fn number(&self, n: f64) -> Value {
    let mut v = ptr::null_mut();
    // SAFETY: env is the live env of this JS-thread call; `v` is a valid out slot.
    unsafe { sys::napi_create_double(self.env, n, &mut v) };
    v
  }

  pub fn string(&self, s: &str) -> Value {
    let mut v = ptr::null_mut();
    // ASCII is Latin-1: V8 copies it without decoding, markedly faster for big strings.
    if s.len() >= 1024 && s.is_ascii() {
      // SAFETY: the pointer and length describe `s`, alive for the call; V8 copies it.
      unsafe {
        sys::napi_create_string_latin1(self.env, s.as_ptr().cast(), s.len() as isize, &mut v)
      };
    } else {
      // SAFETY: the pointer and length describe `s`, alive for the call; V8 copies it.
      unsafe {
        sys::napi_create_string_utf8(self.env, s.as_ptr().cast(), s.len() as isize, &mut v)
      };
    }
    v
  }

  /// An ASCII string V8 reads in place from `text` (kept alive until the string is
  /// collected), where the runtime has `node_api_create_external_string_latin1`; a copy
  /// otherwise.
  pub fn external_latin1(&self, text: Bytes) -> Value {
    let Some(create) = external_latin1_function() else {
      return self.string(std::str::from_utf8(&text).unwrap_or(""));
    };
    let owner = Box::into_raw(Box::new(text));
    // SAFETY: owner is a live Box<Bytes>; the data pointer stays valid while it lives.
    let (data, len) = unsafe { ((*owner).as_ptr(), (*owner).len()) };
    let mut value = ptr::null_mut();
    let mut copied = false;
    // SAFETY: `create` is Node's function (see external_latin1_function); data/len stay valid
    // until release_external frees the owner, which is the finalizer hint.
    let status = unsafe {
      create(
        self.env,
        data.cast_mut().cast(),
        len,
        Some(release_external),
        owner.cast(),
        &mut value,
        &mut copied,
      )
    };
    if status != sys::Status::napi_ok || copied {
      // Not adopted: the finalizer will never run, so the owner is ours to drop.
      // SAFETY: the string was not adopted, so the finalizer never runs and the box is ours.
      let text = unsafe { Box::from_raw(owner) };
      if status != sys::Status::napi_ok {
        return self.string(std::str::from_utf8(&text).unwrap_or(""));
      }
    } else {
      external_memory::adopted(self.env, len);
    }
    value
  }

  pub fn global(&self) -> Value {
    let mut v = ptr::null_mut();
    // SAFETY: env is the live env of this JS-thread call; `v` is a valid out slot.
    unsafe { sys::napi_get_global(self.env, &mut v) };
    v
  }

  pub fn get(&self, object: Value, name: &str) -> Result<Value, Thrown> {
    let mut v = ptr::null_mut();
    // SAFETY: object is a value of the current scope; `name` is NUL-terminated.
    let status = with_c_name(name, |name| unsafe {
      sys::napi_get_named_property(self.env, object, name, &mut v)
    });
    self.check(status)?;
    Ok(v)
  }

  /// `name in object` (accessors on the prototype count).
  pub fn has(&self, object: Value, name: &str) -> bool {
    let key = self.string(name);
    let mut found = false;
    // SAFETY: object and key are values of the current scope; `found` is a valid out slot.
    let status = unsafe { sys::napi_has_property(self.env, object, key, &mut found) };
    status == sys::Status::napi_ok && found
  }

  pub fn set(&self, object: Value, name: &str, value: Value) {
    // SAFETY: object and value are of the current scope; `name` is NUL-terminated.
    with_c_name(name, |name| unsafe {
      sys::napi_set_named_property(self.env, object, name, value)
    });
  }

  pub fn type_of(&self, value: Value) -> i32 {
    let mut t = sys::ValueType::napi_undefined;
    // SAFETY: value is a value of the current scope; `t` is a valid out slot.
    unsafe { sys::napi_typeof(self.env, value, &mut t) };
    t
  }

  pub fn is_nullish(&self, value: Value) -> bool {
    matches!(
      self.type_of(value),
      sys::ValueType::napi_undefined | sys::ValueType::napi_null
    )
  }

  pub fn is_function(&self, value: Value) -> bool {
    self.type_of(value) == sys::ValueType::napi_function
  }

  /// A plain object in the `Record<string, unknown>` sense: not null, not an array, not a function.
  pub fn is_record(&self, value: Value) -> bool {
    let mut array = false;
    // SAFETY: value is a value of the current scope; `array` is a valid out slot.
    unsafe { sys::napi_is_array(self.env, value, &mut array) };
    self.type_of(value) == sys::ValueType::napi_object && !array
  }

  /// A native promise (a subclass's too).
  pub fn is_promise(&self, value: Value) -> bool {
    let mut promise = false;
    // SAFETY: value is a value of the current scope; `promise` is a valid out slot.
    unsafe { sys::napi_is_promise(self.env, value, &mut promise) };
    promise
  }

  pub fn is_array(&self, value: Value) -> bool {
    let mut array = false;
    // SAFETY: value is a value of the current scope; `array` is a valid out slot.
    unsafe { sys::napi_is_array(self.env, value, &mut array) };
    array
  }

  pub fn rust_string(&self, value: Value) -> Option<String> {
    self
      .str_in(value, &mut room::<STACK_STRING>())
      .map(Cow::into_owned)
  }

  /// `value` as text, read into `small` when it fits (most do: a method, a request's
  /// params), else onto the heap; `None` if it is not a string.
  pub fn str_in<'b>(&self, value: Value, small: &'b mut [MaybeUninit<u8>]) -> Option<Cow<'b, str>> {
    // One call reads a short string, and its status says whether `value` is one at all.
    let mut written = 0usize;
    // SAFETY: `small` is a writable buffer of the length given; `written` a valid out slot.
    let status = unsafe {
      sys::napi_get_value_string_utf8(
        self.env,
        value,
        small.as_mut_ptr().cast(),
        small.len(),
        &mut written,
      )
    };
    if status != sys::Status::napi_ok {
      return None;
    }
    // A cut string fills the buffer up to its NUL, less at most a 4-byte character's rest.
    if written + 5 <= small.len() {
      // SAFETY: Node-API wrote `written` bytes, and a NUL after them, at the start of `small`.
      let text = unsafe { std::slice::from_raw_parts(small.as_ptr().cast::<u8>(), written) };
      return std::str::from_utf8(text).ok().map(Cow::Borrowed);
    }
    let mut len = 0usize;
    // SAFETY: value is a string of the current scope; the buffer holds what the length call reported.
    unsafe { sys::napi_get_value_string_utf8(self.env, value, ptr::null_mut(), 0, &mut len) };
    let mut buf = vec![0u8; len + 1];
    // SAFETY: value is a string of the current scope; the buffer holds what the length call reported.
    unsafe {
      sys::napi_get_value_string_utf8(
        self.env,
        value,
        buf.as_mut_ptr().cast(),
        buf.len(),
        &mut written,
      )
    };
    buf.truncate(written);
    String::from_utf8(buf).ok().map(Cow::Owned)
  }

  pub fn number_value(&self, value: Value) -> Option<f64> {
    if self.type_of(value) != sys::ValueType::napi_number {
      return None;
    }
    let mut n = 0f64;
    // SAFETY: value is a number of the current scope (checked above).
    unsafe { sys::napi_get_value_double(self.env, value, &mut n) };
    Some(n)
  }

  pub fn truthy(&self, value: Value) -> bool {
    let mut coerced = ptr::null_mut();
    let mut b = false;
    // SAFETY: value is of the current scope; the out slots are valid.
    unsafe {
      sys::napi_coerce_to_bool(self.env, value, &mut coerced);
      sys::napi_get_value_bool(self.env, coerced, &mut b);
    }
    b
  }

  /// Own enumerable string keys.
  pub fn keys(&self, object: Value) -> Result<Vec<String>, Thrown> {
    let mut names = ptr::null_mut();
    // SAFETY: object is a value of the current scope; `names` is a valid out slot.
    self.check(unsafe { sys::napi_get_property_names(self.env, object, &mut names) })?;
    let mut len = 0u32;
    // SAFETY: the value is an array of the current scope; `len` is a valid out slot.
    unsafe { sys::napi_get_array_length(self.env, names, &mut len) };
    let mut keys = Vec::with_capacity(len as usize);
    for i in 0..len {
      let mut key = ptr::null_mut();
      // SAFETY: the array is a value of the current scope; the out slot is valid.
      self.check(unsafe { sys::napi_get_element(self.env, names, i, &mut key) })?;
      if let Some(key) = self.rust_string(key) {
        keys.push(key);
      }
    }
    Ok(keys)
  }

  pub fn element(&self, array: Value, index: u32) -> Result<Value, Thrown> {
    let mut v = ptr::null_mut();
    // SAFETY: the array is a value of the current scope; the out slot is valid.
    self.check(unsafe { sys::napi_get_element(self.env, array, index, &mut v) })?;
    Ok(v)
  }

  pub fn array_length(&self, array: Value) -> u32 {
    let mut len = 0u32;
    // SAFETY: the value is an array of the current scope; `len` is a valid out slot.
    unsafe { sys::napi_get_array_length(self.env, array, &mut len) };
    len
  }

  pub fn call(&self, function: Value, this: Value, args: &[Value]) -> Result<Value, Thrown> {
    let mut result = ptr::null_mut();
    // SAFETY: function, this and the args are values of the current scope; argc matches args.
    self.check(unsafe {
      sys::napi_call_function(
        self.env,
        this,
        function,
        args.len(),
        args.as_ptr(),
        &mut result,
      )
    })?;
    Ok(result)
  }

  /// Runs `read` on the bytes a typed array (a `Uint8Array`, a `Buffer`) views; `None` if
  /// `value` is not one.
  pub fn with_bytes<T>(&self, value: Value, read: impl FnOnce(&[u8]) -> T) -> Option<T> {
    let mut kind = 0;
    let mut length = 0;
    let mut data = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    let mut offset = 0;
    // SAFETY: value is a value of the current scope; the out-pointers are valid locals.
    let status = unsafe {
      sys::napi_get_typedarray_info(
        self.env,
        value,
        &mut kind,
        &mut length,
        &mut data,
        &mut buffer,
        &mut offset,
      )
    };
    if status != sys::Status::napi_ok || kind != sys::TypedarrayType::uint8_array {
      return None;
    }
    if data.is_null() || length == 0 {
      return Some(read(&[]));
    }
    // SAFETY: a Uint8Array's data (already past its byte offset) holds `length` bytes, and
    // stays valid while `value` is alive: for the whole call.
    Some(read(unsafe {
      std::slice::from_raw_parts(data.cast::<u8>(), length)
    }))
  }

  /// `JSON.parse` or `JSON.stringify`, the originals, looked up once per thread (a hot path:
  /// every request, result and notification goes through them). Neither reads its `this`,
  /// so callers pass the function itself as the receiver: one reference read per call.
  fn json_method(&self, name: &str) -> Result<Value, Thrown> {
    thread_local! {
      static JSON: std::cell::RefCell<Option<(sys::napi_env, [sys::napi_ref; 2])>> =
        const { std::cell::RefCell::new(None) };
    }
    let index = usize::from(name != "parse");
    let cached = JSON.with(|cell| {
      let cell = cell.borrow();
      let (_, refs) = cell.as_ref().filter(|(env, _)| *env == self.env)?;
      self.ref_value(refs[index])
    });
    if let Some(found) = cached {
      return Ok(found);
    }
    let json = self.get(self.global(), "JSON")?;
    let methods = [self.get(json, "parse")?, self.get(json, "stringify")?];
    let refs = methods.map(|method| self.new_ref(method, 1));
    JSON.with(|cell| *cell.borrow_mut() = Some((self.env, refs)));
    Ok(methods[index])
  }

  /// V8's parser: much faster than building objects through napi (NAPI-NOTES).
  pub fn json_parse(&self, text: &str) -> Result<Value, Thrown> {
    let parse = self.json_method("parse")?;
    self.call(parse, parse, &[self.string(text)])
  }

  /// Parsed JSON text, or `undefined` when there is none or it does not parse.
  pub fn json_parse_or_undefined(&self, text: Option<&str>) -> Value {
    text
      .and_then(|text| self.json_parse(text).ok())
      .unwrap_or_else(|| self.undefined())
  }

  /// `JSON.stringify(value)`; `None` when the value has no JSON form (`undefined`, a function).
  pub fn json_stringify(&self, value: Value) -> Result<Option<String>, Thrown> {
    self
      .json_stringify_in(value, &mut room::<STACK_STRING>())
      .map(|text| text.map(Cow::into_owned))
  }

  /// `JSON.stringify(value)`, read as `str_in` reads.
  pub fn json_stringify_in<'b>(
    &self,
    value: Value,
    small: &'b mut [MaybeUninit<u8>],
  ) -> Result<Option<Cow<'b, str>>, Thrown> {
    let stringify = self.json_method("stringify")?;
    let text = self.call(stringify, stringify, &[value])?;
    Ok(self.str_in(text, small))
  }

  pub fn error(&self, kind: ErrorKind, message: &str) -> Value {
    let global = self.global();
    let mut error = ptr::null_mut();
    let constructor = self.get(global, kind.constructor());
    let created = constructor.ok().map(|constructor| {
      let args = [self.string(message)];
      // SAFETY: the constructor and args are values of the current scope; argc matches args.
      unsafe { sys::napi_new_instance(self.env, constructor, 1, args.as_ptr(), &mut error) }
    });
    if created != Some(sys::Status::napi_ok) {
      // SAFETY: the message is a string of the current scope; `error` is a valid out slot.
      unsafe {
        sys::napi_create_error(self.env, ptr::null_mut(), self.string(message), &mut error)
      };
    }
    error
  }

  /// An `Error` by either test: `napi_is_error` misses DOMException, `instanceof` misses
  /// errors from another realm.
  pub fn is_error(&self, value: Value) -> bool {
    let mut is = false;
    // SAFETY: value is a value of the current scope; `is` is a valid out slot.
    unsafe { sys::napi_is_error(self.env, value, &mut is) };
    if is {
      return true;
    }
    self
      .get(self.global(), "Error")
      .is_ok_and(|constructor| self.instance_of(value, constructor))
  }

  /// `value instanceof constructor` (false for a primitive, or when the test throws).
  pub fn instance_of(&self, value: Value, constructor: Value) -> bool {
    if !matches!(
      self.type_of(value),
      sys::ValueType::napi_object | sys::ValueType::napi_function
    ) {
      return false;
    }
    let mut is = false;
    // SAFETY: value and constructor are values of the current scope; `is` is a valid out slot.
    let status = unsafe { sys::napi_instanceof(self.env, value, constructor, &mut is) };
    if status != sys::Status::napi_ok {
      self.take_exception();
      return false;
    }
    is
  }

  /// The completion value of the script `source`, run in the global scope.
  pub fn run_script(&self, source: &str) -> Result<Value, Thrown> {
    let mut result = ptr::null_mut();
    // SAFETY: the source is a string of the current scope; `result` is a valid out slot.
    self.check(unsafe { sys::napi_run_script(self.env, self.string(source), &mut result) })?;
    Ok(result)
  }

  /// `new DOMException(message, name)`; an `Error` of that name where the host has none.
  pub fn dom_exception(&self, message: &str, name: &str) -> Value {
    let made = self
      .get(self.global(), "DOMException")
      .and_then(|constructor| {
        self.construct(constructor, &[self.string(message), self.string(name)])
      });
    made.unwrap_or_else(|_| {
      let error = self.error(ErrorKind::Error, message);
      self.set(error, "name", self.string(name));
      error
    })
  }

  /// `new constructor(...args)`.
  pub fn construct(&self, constructor: Value, args: &[Value]) -> Result<Value, Thrown> {
    let mut instance = ptr::null_mut();
    // SAFETY: the constructor and args are values of the current scope; argc matches args.
    self.check(unsafe {
      sys::napi_new_instance(
        self.env,
        constructor,
        args.len(),
        args.as_ptr(),
        &mut instance,
      )
    })?;
    Ok(instance)
  }

  /// `String(value)`, for messages built from thrown non-errors.
  pub fn display(&self, value: Value) -> String {
    let mut text = ptr::null_mut();
    // SAFETY: value is a value of the current scope; `text` is a valid out slot.
    let status = unsafe { sys::napi_coerce_to_string(self.env, value, &mut text) };
    if status != sys::Status::napi_ok {
      let mut exception = ptr::null_mut();
      // SAFETY: env is the live env of this JS-thread call.
      unsafe { sys::napi_get_and_clear_last_exception(self.env, &mut exception) };
      return String::new();
    }
    self.rust_string(text).unwrap_or_default()
  }

  /// The `message` of an Error, else `String(value)`.
  pub fn error_message(&self, value: Value) -> String {
    if self.type_of(value) == sys::ValueType::napi_object {
      if let Some(message) = self
        .get(value, "message")
        .ok()
        .and_then(|m| self.rust_string(m))
      {
        return message;
      }
    }
    self.display(value)
  }

  pub fn throw(&self, error: Value) {
    // SAFETY: error is a value of the current scope of this env.
    unsafe { sys::napi_throw(self.env, error) };
  }

  pub fn create_promise(&self) -> Result<(sys::napi_deferred, Value), Thrown> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: env is the live env of this JS-thread call; both out slots are valid.
    self.check(unsafe { sys::napi_create_promise(self.env, &mut deferred, &mut promise) })?;
    Ok((deferred, promise))
  }

  pub fn resolve(&self, deferred: sys::napi_deferred, value: Value) {
    // SAFETY: each deferred is settled once: callers take it out of its slot first.
    unsafe { sys::napi_resolve_deferred(self.env, deferred, value) };
  }

  pub fn reject(&self, deferred: sys::napi_deferred, value: Value) {
    // SAFETY: each deferred is settled once: callers take it out of its slot first.
    unsafe { sys::napi_reject_deferred(self.env, deferred, value) };
  }

  /// A promise already rejected with `value`.
  pub fn rejected(&self, value: Value) -> Result<Value, Thrown> {
    let (deferred, promise) = self.create_promise()?;
    self.reject(deferred, value);
    Ok(promise)
  }

  pub fn resolved(&self, value: Value) -> Result<Value, Thrown> {
    let (deferred, promise) = self.create_promise()?;
    self.resolve(deferred, value);
    Ok(promise)
  }

  pub fn new_ref(&self, value: Value, count: u32) -> sys::napi_ref {
    let mut r = ptr::null_mut();
    // SAFETY: value is a value of the current scope; `r` is a valid out slot.
    unsafe { sys::napi_create_reference(self.env, value, count, &mut r) };
    r
  }

  pub fn ref_value(&self, reference: sys::napi_ref) -> Option<Value> {
    let mut v = ptr::null_mut();
    // SAFETY: reference was made on this env and is not deleted before its owner drops.
    let status = unsafe { sys::napi_get_reference_value(self.env, reference, &mut v) };
    (status == sys::Status::napi_ok && !v.is_null()).then_some(v)
  }

  pub fn delete_ref(&self, reference: sys::napi_ref) {
    // SAFETY: reference was made on this env; its single owner deletes it once.
    unsafe { sys::napi_delete_reference(self.env, reference) };
  }

  /// Makes a strong reference weak (its count drops by one).
  pub fn unref(&self, reference: sys::napi_ref) {
    let mut count = 0;
    // SAFETY: reference is a live reference of this env.
    unsafe { sys::napi_reference_unref(self.env, reference, &mut count) };
  }

  /// A JS function backed by `callback`, owning `data` until the function is collected.
  pub fn function<T: 'static>(
    &self,
    name: &str,
    callback: unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> Value,
    data: T,
  ) -> Result<Value, Thrown> {
    unsafe extern "C" fn drop_data<T>(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
      // SAFETY: `data` is the Box leaked below, finalized exactly once.
      drop(unsafe { Box::from_raw(data.cast::<T>()) });
    }
    let data = Box::into_raw(Box::new(data));
    let mut f = ptr::null_mut();
    // SAFETY: callback matches napi_callback; data is the leaked box the finalizer below frees.
    let created = self.check(unsafe {
      sys::napi_create_function(
        self.env,
        name.as_ptr().cast(),
        name.len() as isize,
        Some(callback),
        data.cast(),
        &mut f,
      )
    });
    if let Err(thrown) = created {
      // SAFETY: the function was not created, so nobody else owns `data`.
      drop(unsafe { Box::from_raw(data) });
      return Err(thrown);
    }
    // SAFETY: f was just created; drop_data::<T> frees exactly the box given as data.
    unsafe {
      sys::napi_add_finalizer(
        self.env,
        f,
        data.cast(),
        Some(drop_data::<T>),
        ptr::null_mut(),
        ptr::null_mut(),
      )
    };
    Ok(f)
  }
}

/// A raw value returned from a `#[napi]` function as is (a promise we made ourselves).
pub struct JsRaw(pub Value);

impl napi::bindgen_prelude::ToNapiValue for JsRaw {
  unsafe fn to_napi_value(_env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
    Ok(value.0)
  }
}

/// A raw argument taken as is: napi-rs's typed conversion would throw synchronously (E2).
#[derive(Clone, Copy)]
pub struct JsArg(pub Value);

impl napi::bindgen_prelude::FromNapiValue for JsArg {
  unsafe fn from_napi_value(_env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    Ok(JsArg(value))
  }
}

impl napi::bindgen_prelude::TypeName for JsArg {
  fn type_name() -> &'static str {
    "unknown"
  }
  fn value_type() -> napi::ValueType {
    napi::ValueType::Unknown
  }
}

impl napi::bindgen_prelude::ValidateNapiValue for JsArg {}

/// The arguments a closure function was called with (missing ones are `undefined`).
pub struct Args<'a> {
  js: Js,
  this: Value,
  values: &'a [Value],
}

impl Args<'_> {
  /// The call's receiver.
  pub fn this(&self) -> Value {
    self.this
  }

  /// The arguments the call passed (at most `CLOSURE_ARGS`).
  pub fn all(&self) -> &[Value] {
    self.values
  }

  pub fn get(&self, index: usize) -> Value {
    self
      .values
      .get(index)
      .copied()
      .unwrap_or_else(|| self.js.undefined())
  }

  /// How many arguments the call passed (at most `CLOSURE_ARGS`).
  pub fn len(&self) -> usize {
    self.values.len()
  }
}

/// Most arguments a closure function reads; the agent's callbacks take at most four.
const CLOSURE_ARGS: usize = 6;

impl Js {
  /// A JS function that runs `callback`; what it returns `Err` with is thrown. The closure
  /// lives until the function is collected. A panic becomes `undefined`, never an abort.
  pub fn closure<F>(&self, name: &str, callback: F) -> Result<Value, Thrown>
  where
    F: Fn(Js, Args<'_>) -> Result<Value, Thrown> + 'static,
  {
    unsafe extern "C" fn trampoline<F>(env: sys::napi_env, info: sys::napi_callback_info) -> Value
    where
      F: Fn(Js, Args<'_>) -> Result<Value, Thrown> + 'static,
    {
      let js = Js::new(env);
      let mut argc = CLOSURE_ARGS;
      let mut argv = [ptr::null_mut(); CLOSURE_ARGS];
      let mut this = ptr::null_mut();
      let mut data = ptr::null_mut();
      // SAFETY: info is the callback info of this call; argv has room for argc values.
      unsafe {
        sys::napi_get_cb_info(
          env,
          info,
          &mut argc,
          argv.as_mut_ptr(),
          &mut this,
          &mut data,
        )
      };
      // SAFETY: data is the F owned by this function (see `function`), alive while it is.
      let callback = unsafe { &*(data as *const F) };
      let args = Args {
        js,
        this,
        values: &argv[..argc.min(CLOSURE_ARGS)],
      };
      let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| callback(js, args)));
      match outcome {
        Ok(Ok(value)) => value,
        Ok(Err(Thrown(error))) => {
          js.throw(error);
          ptr::null_mut()
        }
        Err(_) => js.undefined(),
      }
    }
    self.function(name, trampoline::<F>, callback)
  }

  /// Marks `object` with `tag`. An object takes one tag: a second is refused.
  pub fn tag_object(&self, object: Value, tag: &TypeTag) {
    // SAFETY: object is a value of the current scope; tag outlives the call.
    unsafe { sys::napi_type_tag_object(self.env, object, tag) };
  }

  /// The native value wrapped into `object`, if `object` carries `tag`.
  pub fn unwrap_tagged(&self, object: Value, tag: &TypeTag) -> Option<*mut c_void> {
    let mut native = ptr::null_mut();
    // Unwrapping first keeps non-objects away from the tag check, whose conversion to an
    // object would leave an exception pending for `undefined`.
    // SAFETY: object is a value of the current scope; `native` is a valid out slot.
    let status = unsafe { sys::napi_unwrap(self.env, object, &mut native) };
    if status != sys::Status::napi_ok || native.is_null() {
      return None;
    }
    let mut tagged = false;
    // SAFETY: object is a wrapped object of the current scope; tag outlives the call.
    let status = unsafe { sys::napi_check_object_type_tag(self.env, object, tag, &mut tagged) };
    (status == sys::Status::napi_ok && tagged).then_some(native)
  }

  pub fn strict_equals(&self, a: Value, b: Value) -> bool {
    let mut equal = false;
    // SAFETY: both values belong to the current scope of this env.
    unsafe { sys::napi_strict_equals(self.env, a, b, &mut equal) };
    equal
  }

  /// `delete object[key]`.
  pub fn delete(&self, object: Value, key: &str) {
    let mut deleted = false;
    // SAFETY: object and the key string belong to the current scope of this env.
    unsafe { sys::napi_delete_property(self.env, object, self.string(key), &mut deleted) };
  }

  /// The exception a napi-rs export left pending (it returned `Err`), cleared; `None` if
  /// there is none.
  pub fn take_exception(&self) -> Option<Value> {
    let mut exception = ptr::null_mut();
    // SAFETY: env is the live env of the current JS-thread call.
    unsafe { sys::napi_get_and_clear_last_exception(self.env, &mut exception) };
    (!exception.is_null() && !self.is_nullish(exception)).then_some(exception)
  }

  /// Runs `hook` when this env is torn down (the host exits or a worker ends).
  pub fn on_teardown(&self, hook: impl FnOnce() + 'static) {
    unsafe extern "C" fn run(data: *mut c_void) {
      // SAFETY: data is the Box leaked below; the hook runs once.
      let hook = unsafe { Box::from_raw(data.cast::<Box<dyn FnOnce()>>()) };
      hook();
    }
    let hook: Box<Box<dyn FnOnce()>> = Box::new(Box::new(hook));
    // SAFETY: run matches the cleanup hook signature and owns the leaked box.
    unsafe { sys::napi_add_env_cleanup_hook(self.env, Some(run), Box::into_raw(hook).cast()) };
  }

  /// A function other threads can ask to run `call` on this JS thread (coalesced: several
  /// requests before it runs may run it once). It starts unreferenced.
  pub fn threadsafe_function(
    &self,
    name: &str,
    call: impl Fn(Js) + 'static,
  ) -> Result<Tsfn, Thrown> {
    type Call = Box<dyn Fn(Js)>;
    unsafe extern "C" fn call_js(
      env: sys::napi_env,
      _callback: Value,
      context: *mut c_void,
      _data: *mut c_void,
    ) {
      if env.is_null() || context.is_null() {
        return;
      }
      // SAFETY: context is the Call leaked below, freed only by finalize.
      let call = unsafe { &*(context as *const Call) };
      let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(Js::new(env))));
    }
    unsafe extern "C" fn finalize(_env: sys::napi_env, _data: *mut c_void, context: *mut c_void) {
      // SAFETY: context is the Call leaked below; finalize runs once.
      drop(unsafe { Box::from_raw(context.cast::<Call>()) });
    }
    // The async resource async_hooks see: its hasRef() tells tools that list open handles
    // (Jest's --detectOpenHandles) whether the function currently keeps the host alive.
    let referenced = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let resource = self.object()?;
    let flag = referenced.clone();
    let has_ref = self.closure("hasRef", move |js, _| {
      Ok(js.boolean(flag.load(std::sync::atomic::Ordering::Relaxed)))
    })?;
    self.set(resource, "hasRef", has_ref);
    let context = Box::into_raw(Box::new(Box::new(call) as Call));
    let mut tsfn = ptr::null_mut();
    // SAFETY: call_js and finalize match the napi signatures; finalize reclaims context.
    let status = unsafe {
      sys::napi_create_threadsafe_function(
        self.env,
        ptr::null_mut(),
        resource,
        self.string(name),
        0,
        1,
        ptr::null_mut(),
        Some(finalize),
        context.cast(),
        Some(call_js),
        &mut tsfn,
      )
    };
    if status != sys::Status::napi_ok {
      // SAFETY: not created, so the context is still ours.
      drop(unsafe { Box::from_raw(context) });
      return Err(Thrown(
        self.error(ErrorKind::Error, "Failed to create a threadsafe function"),
      ));
    }
    // SAFETY: tsfn was just created on this thread.
    unsafe { sys::napi_unref_threadsafe_function(self.env, tsfn) };
    Ok(Tsfn {
      raw: tsfn,
      referenced,
    })
  }
}

/// A threadsafe function made by `Js::threadsafe_function`; it lives until `release`, or as
/// long as its env when never released.
#[derive(Clone)]
pub struct Tsfn {
  raw: sys::napi_threadsafe_function,
  /// What the async resource's hasRef() reports.
  referenced: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

// SAFETY: napi_call_threadsafe_function may be called from any thread; ref/unref take the
// JS thread's env and are only called there.
unsafe impl Send for Tsfn {}
// SAFETY: as for Send: shared use only calls the thread-safe entry point.
unsafe impl Sync for Tsfn {}

impl Tsfn {
  /// Asks the JS thread to run the call; from any thread. False once the function is
  /// closing (its env is going away).
  pub fn call(&self) -> bool {
    // SAFETY: the function is live until `release` (see the type's docs).
    let status = unsafe {
      sys::napi_call_threadsafe_function(
        self.raw,
        ptr::null_mut(),
        sys::ThreadsafeFunctionCallMode::nonblocking,
      )
    };
    status == sys::Status::napi_ok
  }

  /// Lets the function go: its call closure is dropped on the JS thread soon after. No
  /// copy may be used afterwards.
  pub fn release(self) {
    // SAFETY: the caller gives up every copy (see above).
    unsafe {
      sys::napi_release_threadsafe_function(self.raw, sys::ThreadsafeFunctionReleaseMode::release)
    };
  }

  /// Whether the function keeps the host alive; on the JS thread.
  pub fn keep_alive(&self, js: Js, keep: bool) {
    self
      .referenced
      .store(keep, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: called on the JS thread of the env that created the function.
    unsafe {
      if keep {
        sys::napi_ref_threadsafe_function(js.env, self.raw);
      } else {
        sys::napi_unref_threadsafe_function(js.env, self.raw);
      }
    }
  }
}

/// A JS value kept alive across awaits (a strong napi reference), shared by clones and
/// deleted with the last one. Only ever touched on the JS thread.
#[derive(Clone)]
pub struct Held(std::rc::Rc<HeldRef>);

pub struct HeldRef {
  env: sys::napi_env,
  reference: sys::napi_ref,
  /// Node-API 9 references only objects and functions: anything else is kept as the only
  /// element of an array.
  boxed: bool,
}

impl Held {
  fn hold(js: Js, value: Value, count: u32) -> Self {
    let boxed = !matches!(
      js.type_of(value),
      sys::ValueType::napi_object | sys::ValueType::napi_function
    );
    let target = if boxed {
      js.array(1)
        .and_then(|array| js.set_element(array, 0, value).map(|()| array))
        .unwrap_or(value)
    } else {
      value
    };
    // A weak reference to a box would let the box go at once: boxes are always strong.
    let count = if boxed { 1 } else { count };
    Held(std::rc::Rc::new(HeldRef {
      env: js.env,
      reference: js.new_ref(target, count),
      boxed,
    }))
  }

  pub fn new(js: Js, value: Value) -> Self {
    Self::hold(js, value, 1)
  }

  /// A reference that does not keep `value` alive (`get` is then `undefined` once collected).
  pub fn weak(js: Js, value: Value) -> Self {
    Self::hold(js, value, 0)
  }

  pub fn js(&self) -> Js {
    Js::new(self.0.env)
  }

  pub fn get(&self, js: Js) -> Value {
    let Some(target) = js.ref_value(self.0.reference) else {
      return js.undefined();
    };
    if self.0.boxed {
      js.element(target, 0).unwrap_or_else(|_| js.undefined())
    } else {
      target
    }
  }
}

impl Drop for HeldRef {
  fn drop(&mut self) {
    Js::new(self.env).delete_ref(self.reference);
  }
}

/// Whether the host runtime is Bun (it has `process.versions.bun`); asked once a process.
pub fn is_bun(js: Js) -> bool {
  static IS_BUN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
  *IS_BUN.get_or_init(|| {
    js.get(js.global(), "process")
      .and_then(|process| js.get(process, "versions"))
      .is_ok_and(|versions| js.has(versions, "bun"))
  })
}

/// `name` (`setImmediate`, `setTimeout`) of Node's own `timers` module, which fake timers in
/// test runners leave alone, else the global one.
pub fn timer_function(js: Js, name: &str) -> Option<Value> {
  (|| {
    let process = js.get(js.global(), "process").ok()?;
    let get_builtin = js
      .get(process, "getBuiltinModule")
      .ok()
      .filter(|f| js.is_function(*f))?;
    let timers = js.call(get_builtin, process, &[js.string("timers")]).ok()?;
    js.get(timers, name).ok().filter(|f| js.is_function(*f))
  })()
  .or_else(|| {
    js.get(js.global(), name)
      .ok()
      .filter(|f| js.is_function(*f))
  })
}
