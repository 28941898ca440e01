//! H10: the one HTTP client builder, below both the transports and the OAuth flow, with the
//! trust conventions of Node and Bun: the system's roots, plus the PEM file
//! `NODE_EXTRA_CA_CERTS` names (read once per process), plus a server's own `ca`; and no
//! certificate checks only when the calling runtime has `NODE_TLS_REJECT_UNAUTHORIZED=0`.
use std::sync::OnceLock;

use reqwest::Certificate;

/// What one client trusts beyond the system's roots and `NODE_EXTRA_CA_CERTS`, and the
/// proxy variables it goes by.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trust {
  /// A server's own CA certificates, as PEM text.
  pub ca: Vec<String>,
  /// `NODE_TLS_REJECT_UNAUTHORIZED=0` in the calling runtime: certificates go unchecked.
  pub insecure: bool,
  /// The proxy variables as the calling runtime's `process.env` has them (Bun keeps its
  /// own apart from the C environment reqwest reads); `None`: the C environment's.
  pub proxies: Option<ProxyVars>,
}

/// The variables the proxy rules read (`REQUEST_METHOD`: a CGI process reads none).
pub const PROXY_VARIABLES: [&str; 9] = [
  "HTTP_PROXY",
  "http_proxy",
  "HTTPS_PROXY",
  "https_proxy",
  "ALL_PROXY",
  "all_proxy",
  "NO_PROXY",
  "no_proxy",
  "REQUEST_METHOD",
];

/// Values of `PROXY_VARIABLES` that are set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyVars(pub Vec<(String, String)>);

impl ProxyVars {
  /// The first of `names` set to something.
  fn first(&self, names: &[&str]) -> Option<&str> {
    names.iter().find_map(|name| {
      self
        .0
        .iter()
        .find(|(key, value)| key == name && !value.is_empty())
        .map(|(_, value)| value.as_str())
    })
  }
}

/// H10: the proxy rules of the environment (as reqwest applies them to the C environment):
/// `NO_PROXY` first, then the scheme's own variable, then `ALL_PROXY`; uppercase before
/// lowercase. With none of the proxy variables set, reqwest's own choice stands (the
/// system's settings on macOS and Windows).
fn with_proxies(
  builder: reqwest::ClientBuilder,
  vars: &ProxyVars,
) -> Result<reqwest::ClientBuilder, String> {
  let http = vars.first(&["HTTP_PROXY", "http_proxy"]);
  let https = vars.first(&["HTTPS_PROXY", "https_proxy"]);
  let all = vars.first(&["ALL_PROXY", "all_proxy"]);
  if http.is_none() && https.is_none() && all.is_none() {
    return Ok(builder);
  }
  let mut builder = builder.no_proxy();
  if vars.first(&["REQUEST_METHOD"]).is_some() {
    return Ok(builder);
  }
  let no = vars
    .first(&["NO_PROXY", "no_proxy"])
    .and_then(reqwest::NoProxy::from_string);
  let invalid = |name: &str| format!("the {name} proxy URL is not valid");
  if let Some(url) = http.or(all) {
    let proxy = reqwest::Proxy::http(url).map_err(|_| invalid("HTTP_PROXY"))?;
    builder = builder.proxy(proxy.no_proxy(no.clone()));
  }
  if let Some(url) = https.or(all) {
    let proxy = reqwest::Proxy::https(url).map_err(|_| invalid("HTTPS_PROXY"))?;
    builder = builder.proxy(proxy.no_proxy(no));
  }
  Ok(builder)
}

/// Node's warning, once per process, when `NODE_TLS_REJECT_UNAUTHORIZED` turns checks off.
pub const INSECURE_WARNING: &str = "Setting the NODE_TLS_REJECT_UNAUTHORIZED environment variable to '0' makes TLS connections and HTTPS requests insecure by disabling certificate verification.";

/// Whether `NODE_TLS_REJECT_UNAUTHORIZED` (the runtime's `process.env` value) turns
/// certificate checks off: only the exact text `"0"` does, as in Node.
pub fn insecure_by(value: Option<&str>) -> bool {
  value == Some("0")
}

/// What Node prints when `NODE_EXTRA_CA_CERTS` cannot be used; the certificates are then
/// ignored and everything else goes on.
fn ignored_extra_certs(file: &str, reason: &str) -> String {
  format!("Warning: Ignoring extra certs from `{file}`, load failed: {reason}")
}

/// `NODE_EXTRA_CA_CERTS`' certificates, read the first time a client is built.
fn process_extra_certs() -> &'static [Certificate] {
  static EXTRA: OnceLock<Vec<Certificate>> = OnceLock::new();
  EXTRA.get_or_init(|| {
    let Some(file) = std::env::var_os("NODE_EXTRA_CA_CERTS").filter(|f| !f.is_empty()) else {
      return Vec::new();
    };
    let file = file.to_string_lossy().into_owned();
    let certs = std::fs::read(&file)
      .map_err(|e| e.to_string())
      .and_then(|pem| pem_certificates(&pem))
      .and_then(taken_as_roots);
    certs.unwrap_or_else(|reason| {
      eprintln!("{}", ignored_extra_certs(&file, &reason));
      Vec::new()
    })
  })
}

/// `certs`, if the platform's verifier takes them as extra roots. Wine's CryptoAPI refuses
/// any (`E_INVALIDARG`), and a client that cannot be built fails plain http too; Node goes
/// on without certificates it cannot load, and so do we.
fn taken_as_roots(certs: Vec<Certificate>) -> Result<Vec<Certificate>, String> {
  let probe = reqwest::Client::builder().tls_certs_merge(certs.iter().cloned());
  match probe.build() {
    Ok(_) => Ok(certs),
    Err(error) => {
      let mut cause: &dyn std::error::Error = &error;
      while let Some(inner) = cause.source() {
        cause = inner;
      }
      Err(cause.to_string())
    }
  }
}

/// The certificates of a PEM bundle; none at all is an error.
fn pem_certificates(pem: &[u8]) -> Result<Vec<Certificate>, String> {
  let certs = Certificate::from_pem_bundle(pem).map_err(|e| e.to_string())?;
  if certs.is_empty() {
    return Err("no certificate in the PEM text".to_string());
  }
  Ok(certs)
}

/// Whether `text` is PEM (else it names a file).
pub fn is_pem(text: &str) -> bool {
  text.contains("-----BEGIN ")
}

/// H10: a client builder trusting what `trust` adds, with rustls's crypto provider (ring)
/// installed once for the process first, as reqwest without a provider of its own requires.
///
/// # Errors
/// A `ca` entry that holds no certificate.
pub fn builder_trusting(trust: &Trust) -> Result<reqwest::ClientBuilder, String> {
  let mut builder = builder();
  for pem in &trust.ca {
    builder = builder.tls_certs_merge(pem_certificates(pem.as_bytes())?);
  }
  if trust.insecure {
    builder = builder.tls_danger_accept_invalid_certs(true);
  }
  match &trust.proxies {
    Some(vars) => with_proxies(builder, vars),
    None => Ok(builder),
  }
}

/// H10: a client builder trusting the system's roots and `NODE_EXTRA_CA_CERTS`.
pub fn builder() -> reqwest::ClientBuilder {
  static PROVIDER: std::sync::Once = std::sync::Once::new();
  PROVIDER.call_once(|| {
    // Another part of the process may have installed one already; that one is kept.
    let _ = rustls::crypto::ring::default_provider().install_default();
  });
  let builder = reqwest::Client::builder();
  let extra = process_extra_certs();
  if extra.is_empty() {
    builder
  } else {
    builder.tls_certs_merge(extra.iter().cloned())
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn h10_pem_text_is_told_from_a_path_and_an_empty_bundle_is_refused() {
    assert!(is_pem("-----BEGIN CERTIFICATE-----\nMII…"));
    assert!(!is_pem("/etc/ssl/ca.pem"));
    let refused = builder_trusting(&Trust {
      ca: vec!["-----BEGIN NOTHING-----".into()],
      ..Trust::default()
    });
    assert!(refused.is_err());
    assert_eq!(
      ignored_extra_certs("/x.pem", "No such file or directory (os error 2)"),
      "Warning: Ignoring extra certs from `/x.pem`, load failed: No such file or directory (os error 2)"
    );
  }

  #[test]
  fn h10_proxy_variables_uppercase_first_and_set_ones_only() {
    let vars = ProxyVars(vec![
      ("http_proxy".into(), "http://lower".into()),
      ("HTTP_PROXY".into(), "http://upper".into()),
      ("NO_PROXY".into(), String::new()),
      ("no_proxy".into(), "example.com".into()),
    ]);
    assert_eq!(
      vars.first(&["HTTP_PROXY", "http_proxy"]),
      Some("http://upper")
    );
    assert_eq!(vars.first(&["NO_PROXY", "no_proxy"]), Some("example.com"));
    assert_eq!(vars.first(&["ALL_PROXY", "all_proxy"]), None);
    let cgi = ProxyVars(vec![
      ("HTTP_PROXY".into(), "http://upper".into()),
      ("REQUEST_METHOD".into(), "GET".into()),
    ]);
    assert!(with_proxies(reqwest::Client::builder(), &cgi).is_ok());
    let bad = ProxyVars(vec![("HTTPS_PROXY".into(), "not a url with spaces".into())]);
    assert_eq!(
      with_proxies(reqwest::Client::builder(), &bad)
        .err()
        .as_deref(),
      Some("the HTTPS_PROXY proxy URL is not valid")
    );
  }
}
