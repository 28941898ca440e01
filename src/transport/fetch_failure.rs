//! How a failed exchange reads (W8, A46): the OS's words and Node's error code, with the
//! URL, whichever way the request went out.
use reqwest::Url;

use crate::error::{errno_name, CoreError};

/// W8: keeps the OS words ("Connection refused") and adds Node's code (`ECONNREFUSED`).
pub fn network_error(url: &Url, error: &reqwest::Error) -> CoreError {
  failure(url, error, error.is_timeout())
}

/// W8 for an error from either way out; `timed_out` names `ETIMEDOUT` where no OS error
/// names a code.
pub fn failure(url: &Url, error: &(dyn std::error::Error + 'static), timed_out: bool) -> CoreError {
  let mut source = Some(error);
  let mut root = error.to_string();
  let mut code = None;
  while let Some(current) = source {
    root = current.to_string();
    if let Some(io) = current.downcast_ref::<std::io::Error>() {
      if let Some(errno) = io.raw_os_error() {
        code = Some(errno_name(errno));
      }
    }
    source = current.source();
  }
  if timed_out {
    code.get_or_insert_with(|| "ETIMEDOUT".to_string());
  }
  let message = match &code {
    // io::Error's text ends with "(os error N)", which the errno name says again.
    Some(code) => {
      let root = root.split(" (os error").next().unwrap_or_default();
      format!("fetch failed: {url}: {root} ({code})")
    }
    None => format!("fetch failed: {url}: {root}"),
  };
  CoreError::Network { message, code }
}

/// A46: a body that broke off after a 2xx answer (the request may have run).
pub fn interrupted_error(url: &Url, error: &reqwest::Error) -> CoreError {
  interrupted(url, error, error.is_timeout())
}

/// A46 for a body read from any source.
pub fn interrupted(
  url: &Url,
  error: &(dyn std::error::Error + 'static),
  timed_out: bool,
) -> CoreError {
  match failure(url, error, timed_out) {
    CoreError::Network { message, code } => CoreError::Interrupted { message, code },
    other => other,
  }
}
