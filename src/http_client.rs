//! H10: the one HTTP client builder, below both the transports and the OAuth flow, with the
//! trust conventions of Node and Bun: the system's roots, plus the PEM file
//! `NODE_EXTRA_CA_CERTS` names (read once per process), plus a server's own `ca`; and no
//! certificate checks only when the calling runtime has `NODE_TLS_REJECT_UNAUTHORIZED=0`.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

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
  pub(crate) fn first(&self, names: &[&str]) -> Option<&str> {
    names.iter().find_map(|name| {
      self
        .0
        .iter()
        .find(|(key, value)| key == name && !value.is_empty())
        .map(|(_, value)| value.as_str())
    })
  }
}

/// H10: which proxies requests go through, by the rules reqwest applies to the C
/// environment: `NO_PROXY` first, then the scheme's own variable, then `ALL_PROXY`;
/// uppercase before lowercase. Both reqwest's client and the direct path go by this one
/// reading.
#[derive(Debug, PartialEq, Eq)]
pub enum ProxyRules<'a> {
  /// reqwest's own choice: the C environment, and the system's settings on macOS and
  /// Windows. The runtime set none of the proxy variables, or gave none.
  System,
  /// The runtime's variables: a proxy per scheme and the hosts that skip it. A CGI process
  /// (`REQUEST_METHOD` set) goes through none.
  Runtime {
    http: Option<&'a str>,
    https: Option<&'a str>,
    no: Option<&'a str>,
  },
}

/// The proxy rules `vars` (the runtime's `process.env`; `None`: the C environment's) set.
pub fn proxy_rules(vars: Option<&ProxyVars>) -> ProxyRules<'_> {
  let Some(vars) = vars else {
    return ProxyRules::System;
  };
  let http = vars.first(&["HTTP_PROXY", "http_proxy"]);
  let https = vars.first(&["HTTPS_PROXY", "https_proxy"]);
  let all = vars.first(&["ALL_PROXY", "all_proxy"]);
  if http.is_none() && https.is_none() && all.is_none() {
    return ProxyRules::System;
  }
  if vars.first(&["REQUEST_METHOD"]).is_some() {
    return ProxyRules::Runtime {
      http: None,
      https: None,
      no: None,
    };
  }
  ProxyRules::Runtime {
    http: http.or(all),
    https: https.or(all),
    no: vars.first(&["NO_PROXY", "no_proxy"]),
  }
}

fn with_proxies(
  builder: reqwest::ClientBuilder,
  vars: Option<&ProxyVars>,
) -> Result<reqwest::ClientBuilder, String> {
  let ProxyRules::Runtime { http, https, no } = proxy_rules(vars) else {
    return Ok(builder);
  };
  let mut builder = builder.no_proxy();
  let no = no.and_then(reqwest::NoProxy::from_string);
  let invalid = |name: &str| format!("the {name} proxy URL is not valid");
  if let Some(url) = http {
    let proxy = reqwest::Proxy::http(url).map_err(|_| invalid("HTTP_PROXY"))?;
    builder = builder.proxy(proxy.no_proxy(no.clone()));
  }
  if let Some(url) = https {
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

/// A certificate, DER.
type Der = rustls::pki_types::CertificateDer<'static>;

/// `NODE_EXTRA_CA_CERTS`' certificates as a trust set, read once per process.
fn process_extra_certs() -> &'static [Der] {
  static EXTRA: OnceLock<Vec<Der>> = OnceLock::new();
  EXTRA.get_or_init(|| {
    let Some(file) = std::env::var_os("NODE_EXTRA_CA_CERTS").filter(|f| !f.is_empty()) else {
      return Vec::new();
    };
    let file = file.to_string_lossy().into_owned();
    let certs = std::fs::read(&file)
      .map_err(|e| e.to_string())
      .and_then(|pem| pem_certificates(&pem))
      .map(trust_set)
      .and_then(|certs| verifier(&certs).map(|_| certs));
    certs.unwrap_or_else(|reason| {
      eprintln!("{}", ignored_extra_certs(&file, &reason));
      Vec::new()
    })
  })
}

/// The certificates of a PEM bundle; none at all is an error.
fn pem_certificates(pem: &[u8]) -> Result<Vec<Der>, String> {
  use rustls::pki_types::pem::Error;
  use rustls::pki_types::pem::PemObject;
  let certs = Der::pem_slice_iter(pem)
    .collect::<Result<Vec<_>, _>>()
    .map_err(|e| match e {
      // The markers are bytes in rustls's text ("[78, 79, …]"): said as text here.
      Error::MissingSectionEnd { end_marker } => format!(
        "the PEM text's {} section has no END line",
        String::from_utf8_lossy(&end_marker)
      ),
      Error::IllegalSectionStart { line } => format!(
        "the PEM text has a malformed line \"{}\"",
        String::from_utf8_lossy(&line)
      ),
      other => other.to_string(),
    })?;
  if certs.is_empty() {
    return Err("no certificate in the PEM text".to_string());
  }
  Ok(certs)
}

/// Whether `text` is PEM (else it names a file).
pub fn is_pem(text: &str) -> bool {
  text.contains("-----BEGIN ")
}

/// rustls's ring provider, installed once for the process as reqwest without a provider of
/// its own requires (another part of the process may have installed one: that one stays).
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
  static PROVIDER: OnceLock<Arc<rustls::crypto::CryptoProvider>> = OnceLock::new();
  PROVIDER
    .get_or_init(|| {
      let _ = rustls::crypto::ring::default_provider().install_default();
      Arc::new(rustls::crypto::ring::default_provider())
    })
    .clone()
}

/// The platform's verifier of the system's roots plus `extra`, built once per distinct
/// `extra`: on Linux building one reads the whole system store from disk (~150 files,
/// 2–3 ms), which every transport paid before its first request. Wine's CryptoAPI refuses
/// any extra root (`E_INVALIDARG`): that is the error.
fn verifier(extra: &[Der]) -> Result<Arc<rustls_platform_verifier::Verifier>, String> {
  type Built = HashMap<Vec<Der>, Arc<rustls_platform_verifier::Verifier>>;
  static BUILT: OnceLock<Mutex<Built>> = OnceLock::new();
  // Held while building: a transport made during the warm-up waits for its verifier
  // instead of reading the store a second time.
  let mut built = BUILT
    .get_or_init(Mutex::default)
    .lock()
    .unwrap_or_else(std::sync::PoisonError::into_inner);
  if let Some(found) = built.get(extra) {
    return Ok(found.clone());
  }
  // As reqwest does: no extra roots, the plain platform verifier (Windows builds no extra
  // store then).
  let made = if extra.is_empty() {
    rustls_platform_verifier::Verifier::new(provider())
  } else {
    rustls_platform_verifier::Verifier::new_with_extra_roots(extra.to_vec(), provider())
  };
  let made = made.map(Arc::new).map_err(|e| e.to_string())?;
  // A process has a handful of trust sets; a runaway one is not kept forever.
  if built.len() >= 64 {
    built.clear();
  }
  built.insert(extra.to_vec(), made.clone());
  Ok(made)
}

/// Builds the verifier of the system's roots and `NODE_EXTRA_CA_CERTS` on a thread of its
/// own, once per process: on Linux that reads the whole store (4–9 ms measured), which the
/// first HTTP transport otherwise waits for (Bun's `fetch` has its roots compiled in).
pub fn warm_up() {
  static STARTED: OnceLock<()> = OnceLock::new();
  STARTED.get_or_init(|| {
    let _ = std::thread::Builder::new()
      .name("mcp-native-trust".into())
      .spawn(|| {
        let _ = verifier(process_extra_certs());
      });
  });
}

/// A trust set in a canonical order without repeats: the same certificates given twice
/// (say through `NODE_EXTRA_CA_CERTS` and `ca`) share one verifier.
fn trust_set(mut certs: Vec<Der>) -> Vec<Der> {
  certs.sort_unstable_by(|a, b| a.as_ref().cmp(b.as_ref()));
  certs.dedup();
  certs
}

/// TLS as reqwest would set it up (TLS 1.2 and 1.3, ALPN h2 then http/1.1), verified by
/// the shared verifier for the system's roots plus `extra`.
fn tls_config(extra: &[Der]) -> Result<rustls::ClientConfig, String> {
  let mut config = rustls::ClientConfig::builder_with_provider(provider())
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .dangerous()
    .with_custom_certificate_verifier(verifier(extra)?)
    .with_no_client_auth();
  config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
  Ok(config)
}

/// H10: the TLS settings of a client that checks certificates against the system's roots,
/// `NODE_EXTRA_CA_CERTS` and what `trust` adds; `None` when `trust` checks none.
///
/// # Errors
/// A `ca` entry that holds no certificate, or that the platform's verifier refuses.
pub fn tls_settings(trust: &Trust) -> Result<Option<rustls::ClientConfig>, String> {
  if trust.insecure {
    return Ok(None);
  }
  let mut extra = process_extra_certs().to_vec();
  for pem in &trust.ca {
    extra.extend(pem_certificates(pem.as_bytes())?);
  }
  tls_config(&trust_set(extra)).map(Some)
}

/// H10: a client builder trusting the system's roots, `NODE_EXTRA_CA_CERTS` and what
/// `trust` adds, going through the proxies `trust` names.
///
/// # Errors
/// A `ca` entry that holds no certificate, or that the platform's verifier refuses.
pub fn builder_trusting(trust: &Trust) -> Result<reqwest::ClientBuilder, String> {
  builder_with(tls_settings(trust)?, trust.proxies.as_ref())
}

/// A client builder with TLS `settings` made by `tls_settings` (`None`: no checks), going
/// through the proxies `proxies` name.
///
/// # Errors
/// A proxy URL that is not one.
pub fn builder_with(
  settings: Option<rustls::ClientConfig>,
  proxies: Option<&ProxyVars>,
) -> Result<reqwest::ClientBuilder, String> {
  provider();
  let builder = match settings {
    Some(config) => reqwest::Client::builder().tls_backend_preconfigured(config),
    None => reqwest::Client::builder().tls_danger_accept_invalid_certs(true),
  };
  with_proxies(builder, proxies)
}

/// H10: a client builder trusting the system's roots and `NODE_EXTRA_CA_CERTS`.
pub fn builder() -> reqwest::ClientBuilder {
  builder_trusting(&Trust::default()).unwrap_or_else(|_| reqwest::Client::builder())
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn h10_a_trust_set_ignores_order_and_repeats() {
    let a = Der::from(vec![1u8, 2, 3]);
    let b = Der::from(vec![0u8, 9]);
    let once = trust_set(vec![a.clone(), b.clone()]);
    assert_eq!(trust_set(vec![b.clone(), a.clone(), b.clone()]), once);
    assert_eq!(once.len(), 2);
  }

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
    let none = ProxyRules::Runtime {
      http: None,
      https: None,
      no: None,
    };
    assert_eq!(proxy_rules(Some(&cgi)), none);
    assert!(with_proxies(reqwest::Client::builder(), Some(&cgi)).is_ok());
    let all = ProxyVars(vec![
      ("all_proxy".into(), "http://all".into()),
      ("HTTPS_PROXY".into(), "http://secure".into()),
      ("NO_PROXY".into(), "localhost".into()),
    ]);
    assert_eq!(
      proxy_rules(Some(&all)),
      ProxyRules::Runtime {
        http: Some("http://all"),
        https: Some("http://secure"),
        no: Some("localhost"),
      }
    );
    let unset = ProxyVars(vec![("NO_PROXY".into(), "localhost".into())]);
    assert_eq!(proxy_rules(Some(&unset)), ProxyRules::System);
    assert_eq!(proxy_rules(None), ProxyRules::System);
    let bad = ProxyVars(vec![("HTTPS_PROXY".into(), "not a url with spaces".into())]);
    assert_eq!(
      with_proxies(reqwest::Client::builder(), Some(&bad))
        .err()
        .as_deref(),
      Some("the HTTPS_PROXY proxy URL is not valid")
    );
  }
}
