//! napi binding layer.
