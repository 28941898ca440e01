//! H10: the one HTTP client builder, below both the transports and the OAuth flow.

/// H10: an HTTP client builder, with rustls's crypto provider (ring) installed once for the
/// process first, as reqwest without a provider of its own requires.
pub fn builder() -> reqwest::ClientBuilder {
  static PROVIDER: std::sync::Once = std::sync::Once::new();
  PROVIDER.call_once(|| {
    // Another part of the process may have installed one already; that one is kept.
    let _ = rustls::crypto::ring::default_provider().install_default();
  });
  reqwest::Client::builder()
}
