//! `request` of the transport classes, entered without napi-rs's per-call borrow scope.
//! For a `&self` method napi-rs opens a scope per call: an `Arc`, thread-local pushes, a
//! class lookup, three allocations, and a borrow check in a mutex-guarded map hashed with
//! SipHash (that check alone about 700 instructions per call under Bun; issue 41). The
//! entry on the prototype keeps what that scope guarantees:
//! - a receiver is trusted only once napi-rs's own checked `request` has unwrapped it as
//!   the class and tagged it (`admit`); any other goes to that checked `request`;
//! - the borrow needs no check: only classes without a `&mut self` method get the entry
//!   (`SharedOnly`), so a `&T` never meets a `&mut T`.
use napi::bindgen_prelude::type_tag_from_ident;

use super::js::{Held, Js, Thrown, TypeTag, Value};
use super::js_side::Shared;

/// A class that napi-rs never lends as `&mut`.
///
/// # Safety
/// No method, getter or setter of the class takes `&mut self`, and nothing else holds a
/// `&mut` of an instance JS can reach (`create_connected`'s `ClassInstance` is gone before
/// its object is handed out): the state changes behind `RefCell`, `OnceCell` or atomics.
pub unsafe trait SharedOnly {}

/// A transport class whose `request` this entry serves.
pub trait RequestEntry: 'static {
  /// The class's name among the exports.
  const CLASS: &'static str;
  /// Whether `install` puts the entry on this class (then it must be `SharedOnly`), so
  /// its checked `request` admits receivers.
  const ENTERED: bool;
  fn side(&self) -> &Shared;
}

/// The tag of `T`'s admitted objects. Unique to this loaded copy of the addon: a class of
/// another copy (another version) may be laid out otherwise.
fn tag<T: RequestEntry>() -> TypeTag {
  static COPY: u8 = 0;
  let class = type_tag_from_ident(T::CLASS);
  TypeTag {
    lower: class.lower ^ (&COPY as *const u8 as u64),
    upper: class.upper,
  }
}

/// Called by the checked `request`, after napi-rs unwrapped `this` as a `T`.
pub fn admit<T: RequestEntry>(js: Js, this: Value) {
  js.tag_object(this, &tag::<T>());
}

/// Puts the entry on `T.prototype.request`; napi-rs's own stays as its checked way in.
pub fn install<T: RequestEntry + SharedOnly>(js: Js, exports: Value) -> Result<(), Thrown> {
  const { assert!(T::ENTERED, "a class with the entry admits its receivers") };
  let prototype = js.get(js.get(exports, T::CLASS)?, "prototype")?;
  let checked = Held::new(js, js.get(prototype, "request")?);
  let tag = tag::<T>();
  let entry = js.closure("request", move |js, args| {
    let this = args.this();
    let Some(native) = js.unwrap_tagged(this, &tag) else {
      return js.call(checked.get(js), this, args.all());
    };
    // SAFETY: only objects napi-rs unwrapped as a `T` carry this copy's tag for `T`
    // (`admit`); the native value lives as long as its object, which `this` keeps alive;
    // and no `&mut T` ever exists while it does (`SharedOnly`).
    let transport = unsafe { &*native.cast::<T>() };
    let given = |index: usize| args.all().get(index).copied();
    super::calls::request(js, transport.side(), args.get(0), given(1), given(2))
  })?;
  js.set(prototype, "request", entry);
  Ok(())
}
