//! O2: where the metadata documents are looked for, in the order the 2025-11-25
//! authorization spec gives (RFC 9728 §3.1 for the resource, RFC 8414 §3.1 and OpenID
//! Connect Discovery for the authorization server), and which resource a token is for.
use url::Url;

const RESOURCE_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
const OAUTH_WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
const OPENID_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// The protected-resource metadata URLs to try for `server`: the one the challenge named,
/// then the path-based well-known URL, then the root one.
pub fn resource_metadata_urls(server: &Url, from_challenge: Option<&str>) -> Vec<Url> {
  let mut urls = Vec::new();
  if let Some(url) = from_challenge.and_then(|u| server.join(u).ok()) {
    urls.push(url);
  }
  let path = server.path().trim_end_matches('/');
  if !path.is_empty() {
    urls.extend(with_path(server, &format!("{RESOURCE_WELL_KNOWN}{path}")));
  }
  urls.extend(with_path(server, RESOURCE_WELL_KNOWN));
  dedup(urls)
}

/// The authorization-server metadata URLs for `issuer`. With a path component:
/// OAuth path-inserted, OpenID path-inserted, OpenID path-appended; without: OAuth, OpenID.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
  let path = issuer.path().trim_end_matches('/');
  let candidates = if path.is_empty() {
    vec![OAUTH_WELL_KNOWN.to_string(), OPENID_WELL_KNOWN.to_string()]
  } else {
    vec![
      format!("{OAUTH_WELL_KNOWN}{path}"),
      format!("{OPENID_WELL_KNOWN}{path}"),
      format!("{path}{OPENID_WELL_KNOWN}"),
    ]
  };
  candidates
    .iter()
    .filter_map(|p| with_path(issuer, p))
    .collect()
}

/// RFC 8707 / MCP "canonical server URI" when no metadata names the resource: no fragment,
/// no query, and no trailing slash on an empty path.
pub fn canonical_resource(server: &Url) -> String {
  let mut url = server.clone();
  url.set_fragment(None);
  url.set_query(None);
  let text = url.to_string();
  if url.path() == "/" {
    text.trim_end_matches('/').to_string()
  } else {
    text
  }
}

/// RFC 9728 §3.3: the metadata must be about this server: same origin, and the server's path
/// at or below the resource's path.
pub fn resource_covers(resource: &str, server: &Url) -> bool {
  let Ok(resource) = Url::parse(resource) else {
    return false;
  };
  if resource.origin() != server.origin() {
    return false;
  }
  let base = resource.path().trim_end_matches('/');
  let path = server.path().trim_end_matches('/');
  path == base || path.starts_with(&format!("{base}/"))
}

/// The 2025-03-26 fallback for a server without resource metadata: its origin is the
/// authorization server.
pub fn origin_issuer(server: &Url) -> String {
  server.origin().ascii_serialization()
}

/// MCP 2025-11-25: authorization-server endpoints are HTTPS; plain HTTP only on loopback.
pub fn secure_endpoint(url: &str) -> bool {
  let Ok(url) = Url::parse(url) else {
    return false;
  };
  match url.scheme() {
    "https" => true,
    "http" => match url.host() {
      Some(url::Host::Domain(host)) => host.eq_ignore_ascii_case("localhost"),
      Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
      Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
      None => false,
    },
    _ => false,
  }
}

fn with_path(base: &Url, path: &str) -> Option<Url> {
  let mut url = base.clone();
  url.set_path(path);
  url.set_query(None);
  url.set_fragment(None);
  Some(url)
}

fn dedup(urls: Vec<Url>) -> Vec<Url> {
  let mut out: Vec<Url> = Vec::new();
  for url in urls {
    if !out.contains(&url) {
      out.push(url);
    }
  }
  out
}

#[cfg(test)]
mod tests {
  use super::*;

  fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
  }

  fn texts(urls: Vec<Url>) -> Vec<String> {
    urls.into_iter().map(|u| u.to_string()).collect()
  }

  #[test]
  fn resource_metadata_header_then_path_then_root() {
    let server = url("http://localhost:3000/mcp");
    assert_eq!(
      texts(resource_metadata_urls(
        &server,
        Some("http://localhost:3000/custom/metadata/location.json")
      )),
      [
        "http://localhost:3000/custom/metadata/location.json",
        "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
        "http://localhost:3000/.well-known/oauth-protected-resource",
      ]
    );
    assert_eq!(
      texts(resource_metadata_urls(&url("https://a.example/"), None)),
      ["https://a.example/.well-known/oauth-protected-resource"]
    );
  }

  #[test]
  fn authorization_server_order_with_and_without_path() {
    assert_eq!(
      texts(authorization_server_metadata_urls(&url(
        "http://localhost:4000/tenant1"
      ))),
      [
        "http://localhost:4000/.well-known/oauth-authorization-server/tenant1",
        "http://localhost:4000/.well-known/openid-configuration/tenant1",
        "http://localhost:4000/tenant1/.well-known/openid-configuration",
      ]
    );
    assert_eq!(
      texts(authorization_server_metadata_urls(&url(
        "http://localhost:4000"
      ))),
      [
        "http://localhost:4000/.well-known/oauth-authorization-server",
        "http://localhost:4000/.well-known/openid-configuration",
      ]
    );
  }

  #[test]
  fn canonical_resource_drops_fragment_query_and_bare_slash() {
    assert_eq!(
      canonical_resource(&url("HTTPS://MCP.Example.com/#x")),
      "https://mcp.example.com"
    );
    assert_eq!(
      canonical_resource(&url("https://mcp.example.com/mcp?session=1")),
      "https://mcp.example.com/mcp"
    );
  }

  #[test]
  fn resource_must_cover_the_server() {
    let server = url("http://localhost:3000/mcp");
    assert!(resource_covers("http://localhost:3000/mcp", &server));
    assert!(resource_covers("http://localhost:3000", &server));
    assert!(resource_covers("http://localhost:3000/", &server));
    assert!(!resource_covers("http://localhost:3000/other", &server));
    assert!(!resource_covers("http://localhost:3000/mc", &server));
    assert!(!resource_covers("http://localhost:3001/mcp", &server));
    assert!(!resource_covers("https://evil.example/mcp", &server));
    assert!(!resource_covers("not a url", &server));
  }

  #[test]
  fn endpoints_are_https_or_loopback() {
    assert!(secure_endpoint("https://as.example/token"));
    assert!(secure_endpoint("http://localhost:4000/token"));
    assert!(secure_endpoint("http://127.0.0.1/token"));
    assert!(secure_endpoint("http://[::1]:1/token"));
    assert!(!secure_endpoint("http://as.example/token"));
    assert!(!secure_endpoint("http://localhost.evil.example/token"));
    assert!(!secure_endpoint("ftp://as.example/token"));
    assert!(!secure_endpoint("not a url"));
  }

  #[test]
  fn origin_is_the_legacy_issuer() {
    assert_eq!(
      origin_issuer(&url("http://localhost:3000/mcp")),
      "http://localhost:3000"
    );
  }
}
