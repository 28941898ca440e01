//! A result the core parsed into a tree (`protocol::tree`), built as JS values.
use bytes::Bytes;

use super::js::{Js, Thrown, Value, EXTERNAL_STRING_BYTES};
use crate::protocol::tree::{Node, ResultTree, Text};

/// Builds a parsed result as JS values: what `JSON.parse` would give, key order included.
/// Big ASCII strings become external strings over the frame (or the unescaped text) where
/// the runtime offers them, so the megabytes are not copied again on the JS thread.
pub(super) fn build_tree(js: Js, tree: &mut ResultTree) -> Result<Value, Thrown> {
  let ResultTree { frame, root, ascii } = tree;
  build_node(js, frame, *ascii, root)
}

/// `ascii`: the whole frame is known to be ASCII, so its slices need no check before
/// becoming Latin-1 strings.
fn build_node(js: Js, frame: &Bytes, ascii: bool, node: &mut Node) -> Result<Value, Thrown> {
  Ok(match node {
    Node::Null => js.null(),
    Node::Bool(b) => js.boolean(*b),
    Node::Number(n) => js.number(*n),
    Node::Text(text) => build_text(js, frame, ascii, text),
    Node::Array(items) => {
      let array = js.array(items.len())?;
      for (i, item) in items.iter_mut().enumerate() {
        js.set_element(array, i as u32, build_node(js, frame, ascii, item)?)?;
      }
      array
    }
    Node::Object(fields) => {
      let object = js.object()?;
      for (key, item) in fields.iter_mut() {
        let key = build_text(js, frame, ascii, key);
        js.set_property(object, key, build_node(js, frame, ascii, item)?)?;
      }
      object
    }
  })
}

fn build_text(js: Js, frame: &Bytes, ascii: bool, text: &mut Text) -> Value {
  match text {
    Text::Slice { start, len } => {
      let bytes = frame.slice(*start..*start + *len);
      if bytes.len() >= EXTERNAL_STRING_BYTES && (ascii || bytes.is_ascii()) {
        return js.external_latin1(bytes);
      }
      js.string(std::str::from_utf8(&bytes).unwrap_or(""))
    }
    Text::Owned(owned) => {
      if owned.len() >= EXTERNAL_STRING_BYTES && owned.is_ascii() {
        return js.external_latin1(Bytes::from(std::mem::take(owned)));
      }
      js.string(owned)
    }
  }
}
