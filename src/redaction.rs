//! Secrets out of everything the client says: error messages, log calls and the CLI's output.
//! One rule for all of them: the values of secret-looking query (and fragment) parameters, a
//! URL's userinfo, `Bearer`/`Basic` credentials and secret-named `name: value` pairs become
//! `[redacted]`. A4's `redactUrlForLog` is the same rule applied to one URL.
pub const REDACTED: &str = "[redacted]";

/// Query parameter names that hold secrets: A4's `/key|token|secret|auth/i`, the agent's
/// secret keys (passwords, credentials, signatures) and the exact short forms.
fn is_secret_param(name: &str) -> bool {
  let name = name.to_ascii_lowercase();
  const PARTS: [&str; 9] = [
    "key",
    "token",
    "secret",
    "auth",
    "passw",
    "pwd",
    "credential",
    "signature",
    "cookie",
  ];
  PARTS.iter().any(|part| name.contains(part)) || matches!(name.as_str(), "sig" | "pass" | "code")
}

/// Names that hold a secret outside a URL too, as `name: value` or `name=value`: narrower
/// than a query's, so prose such as "missing key: x" keeps its words.
fn is_secret_field(name: &str) -> bool {
  let name = name.to_ascii_lowercase();
  const PARTS: [&str; 11] = [
    "token",
    "secret",
    "passw",
    "pwd",
    "credential",
    "authorization",
    "apikey",
    "api_key",
    "api-key",
    "private_key",
    "signature",
  ];
  PARTS.iter().any(|part| name.contains(part))
}

/// A4: `text` as one URL for a log line: secret parameter values and the userinfo replaced
/// (the query then written as `URLSearchParams` writes it); text that is not a URL keeps
/// only what precedes its `?`.
pub fn redact_url_for_log(text: &str) -> String {
  let Ok(mut url) = url::Url::parse(text) else {
    return redact_secrets(text.split('?').next().unwrap_or_default());
  };
  let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
  if pairs.iter().any(|(name, _)| is_secret_param(name)) {
    url
      .query_pairs_mut()
      .clear()
      .extend_pairs(pairs.iter().map(|(name, value)| {
        (
          name,
          if is_secret_param(name) {
            REDACTED
          } else {
            value
          },
        )
      }));
  }
  let url = url.to_string();
  redact_userinfo(&url).unwrap_or(url)
}

/// `text` with every secret this module knows replaced by `[redacted]`, the rest unchanged.
pub fn redact_secrets(text: &str) -> String {
  if !might_hold_a_secret(text) {
    return text.to_string();
  }
  let text = redact_userinfos(text);
  let text = redact_schemes(&text);
  redact_pairs(&text)
}

/// A cheap test that lets most messages through untouched.
fn might_hold_a_secret(text: &str) -> bool {
  text.contains("://") || text.contains('=') || text.contains(':') || {
    let lower = text.to_ascii_lowercase();
    lower.contains("bearer") || lower.contains("basic")
  }
}

fn redact_userinfo(url: &str) -> Option<String> {
  let start = url.find("://")? + 3;
  let authority_end = url[start..]
    .find(['/', '?', '#'])
    .map_or(url.len(), |i| start + i);
  let at = url[start..authority_end].rfind('@')? + start;
  Some(format!("{}{REDACTED}{}", &url[..start], &url[at..]))
}

/// Ends a URL, a token or a value inside a message.
fn is_delimiter(c: char) -> bool {
  c.is_whitespace()
    || matches!(
      c,
      '"' | '\'' | '`' | '<' | '>' | ',' | ';' | ')' | ']' | '}'
    )
}

/// Each `scheme://user:pass@host` in `text` loses its userinfo.
fn redact_userinfos(text: &str) -> String {
  let mut out = String::with_capacity(text.len());
  let mut rest = text;
  while let Some(found) = rest.find("://") {
    let start = found + 3;
    out.push_str(&rest[..start]);
    let authority_end = rest[start..]
      .find(|c: char| {
        // Brackets belong to an IPv6 host (and to our own `[redacted]`).
        !matches!(c, '[' | ']') && is_delimiter(c) || matches!(c, '/' | '?' | '#')
      })
      .map_or(rest.len(), |i| start + i);
    match rest[start..authority_end].rfind('@') {
      Some(at) => {
        out.push_str(REDACTED);
        out.push_str(&rest[start + at..authority_end]);
      }
      None => out.push_str(&rest[start..authority_end]),
    }
    rest = &rest[authority_end..];
  }
  out.push_str(rest);
  out
}

/// `Bearer <token>` and `Basic <token>` (any case) lose the token; an auth-param such as
/// `Bearer realm="x"` is a challenge, not a credential, and stays.
fn redact_schemes(text: &str) -> String {
  let mut out = String::with_capacity(text.len());
  let mut i = 0;
  let bytes = text.as_bytes();
  while i < bytes.len() {
    let at_word = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
    let scheme = ["bearer", "basic"].into_iter().find(|s| {
      at_word
        && bytes.len() >= i + s.len()
        && bytes[i..i + s.len()].eq_ignore_ascii_case(s.as_bytes())
    });
    let Some(scheme) = scheme else {
      let c = text[i..].chars().next().map_or(1, char::len_utf8);
      out.push_str(&text[i..i + c]);
      i += c;
      continue;
    };
    let after = i + scheme.len();
    let token_start = after + count(&bytes[after..], |b| b == b' ' || b == b'\t');
    let token68 = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b);
    let token_len = count(&bytes[token_start..], token68);
    let padded = token_start + token_len;
    let token_end = padded + count(&bytes[padded..], |b| b == b'=');
    // `name="value"` or `name=value` after the scheme: an auth-param of a challenge.
    let param = token_end > padded
      && bytes
        .get(token_end)
        .is_some_and(|&b| !b.is_ascii_whitespace() && b != b',' && b != b';');
    out.push_str(&text[i..after]);
    let token = &text[token_start..padded];
    let another_scheme = ["bearer", "basic"]
      .iter()
      .any(|s| token.eq_ignore_ascii_case(s));
    if token_start == after || token_len == 0 || param || another_scheme {
      i = after;
      continue;
    }
    out.push_str(&text[after..token_start]);
    out.push_str(REDACTED);
    i = token_end;
  }
  out
}

fn count(bytes: &[u8], matches: impl Fn(u8) -> bool) -> usize {
  bytes.iter().take_while(|&&b| matches(b)).count()
}

/// `name=value` after `?`, `&`, `#` or `;` where the name is a secret parameter's, and
/// `name: value`, `name=value`, `"name": "value"` anywhere where it is a secret field's.
fn redact_pairs(text: &str) -> String {
  let bytes = text.as_bytes();
  let name_byte = |b: u8| b.is_ascii_alphanumeric() || b"_-.%".contains(&b);
  let mut out = String::with_capacity(text.len());
  let mut copied = 0;
  let mut i = 0;
  while i < bytes.len() {
    if !name_byte(bytes[i]) || (i > 0 && name_byte(bytes[i - 1])) {
      i += 1;
      continue;
    }
    let name_end = i + count(&bytes[i..], name_byte);
    let name = &text[i..name_end];
    let in_query = i > 0 && matches!(bytes[i - 1], b'?' | b'&' | b'#' | b';');
    let quoted_name = i > 0 && bytes[i - 1] == b'"' && bytes.get(name_end) == Some(&b'"');
    let mut j = name_end + usize::from(quoted_name);
    let value = if in_query && bytes.get(j) == Some(&b'=') && is_secret_param(name) {
      let start = j + 1;
      Some((start, value_end(text, start, |c| matches!(c, '&' | '#'))))
    } else if field_start(bytes, i) && is_secret_field(name) {
      j += count(&bytes[j..], |b| b == b' ');
      if matches!(bytes.get(j), Some(b':' | b'=')) {
        j += 1;
        j += count(&bytes[j..], |b| b == b' ');
        if starts_with_scheme(&bytes[j..]) {
          // `Authorization: Bearer <token>`: the scheme's pass took the token.
          None
        } else if bytes.get(j) == Some(&b'"') {
          let start = j + 1;
          let len = field_string_len(&bytes[start..]);
          Some((start, start + len))
        } else {
          Some((j, value_end(text, j, |c| c == '&')))
        }
      } else {
        None
      }
    } else {
      None
    };
    match value {
      // A scheme's token was already replaced; an empty value has nothing to hide.
      Some((start, end)) if end > start && !text[start..].starts_with(REDACTED) => {
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED);
        copied = end;
        i = end.max(i + 1);
      }
      _ => i = name_end,
    }
  }
  out.push_str(&text[copied..]);
  out
}

/// Where a value starting at `start` ends: at a delimiter or a `stop` character; an earlier
/// pass's `[redacted]` inside it is part of it.
fn value_end(text: &str, start: usize, stop: impl Fn(char) -> bool) -> usize {
  let mut at = start;
  while let Some(c) = text[at..].chars().next() {
    if text[at..].starts_with(REDACTED) {
      at += REDACTED.len();
    } else if is_delimiter(c) || stop(c) {
      break;
    } else {
      at += c.len_utf8();
    }
  }
  at
}

/// Whether a field name may start at `i`: at the start, after a space, a quote or a
/// separator, not inside a path or a word (`/etc/passwd: …` names no field).
fn field_start(bytes: &[u8], i: usize) -> bool {
  i == 0
    || matches!(
      bytes[i - 1],
      b' ' | b'\t' | b'\n' | b'"' | b'\'' | b'{' | b',' | b';' | b'(' | b'['
    )
}

fn starts_with_scheme(bytes: &[u8]) -> bool {
  ["bearer ", "basic "]
    .iter()
    .any(|s| bytes.len() >= s.len() && bytes[..s.len()].eq_ignore_ascii_case(s.as_bytes()))
}

/// The length of a JSON string's content up to its closing quote (escapes skipped).
fn field_string_len(bytes: &[u8]) -> usize {
  let mut i = 0;
  while i < bytes.len() {
    match bytes[i] {
      b'\\' => i += 2,
      b'"' => return i,
      _ => i += 1,
    }
  }
  bytes.len()
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a4_secret_query_values_are_redacted() {
    assert_eq!(
      redact_url_for_log("https://x.example/mcp?apiKey=abc&q=hello world&AUTH_code=1&key=2&key=3"),
      "https://x.example/mcp?apiKey=%5Bredacted%5D&q=hello+world&AUTH_code=%5Bredacted%5D&key=%5Bredacted%5D&key=%5Bredacted%5D"
    );
    assert_eq!(
      redact_url_for_log("https://x.example/mcp?page=2"),
      "https://x.example/mcp?page=2"
    );
    assert_eq!(
      redact_url_for_log("https://x.example/mcp"),
      "https://x.example/mcp"
    );
    assert_eq!(redact_url_for_log("not a url?token=1"), "not a url");
    assert_eq!(redact_url_for_log("relative/path"), "relative/path");
  }

  #[test]
  fn a4_the_userinfo_and_the_wider_names_go_too() {
    assert_eq!(
      redact_url_for_log("https://me:hunter2@x.example/mcp?sig=s&password=p&Signature=z"),
      "https://[redacted]@x.example/mcp?sig=%5Bredacted%5D&password=%5Bredacted%5D&Signature=%5Bredacted%5D"
    );
    assert_eq!(
      redact_url_for_log("https://ghp_tok@x.example/"),
      "https://[redacted]@x.example/"
    );
  }

  #[test]
  fn urls_inside_messages_lose_their_secrets() {
    assert_eq!(
      redact_secrets(
        "fetch failed: http://u:pw@127.0.0.1:9/mcp?api_key=K1&page=2&access_token=T#x: refused"
      ),
      "fetch failed: http://[redacted]@127.0.0.1:9/mcp?api_key=[redacted]&page=2&access_token=[redacted]#x: refused"
    );
    assert_eq!(
      redact_secrets("endpoint /messages?sessionId=1&token=abc named"),
      "endpoint /messages?sessionId=1&token=abc named".replace("abc", REDACTED)
    );
    assert_eq!(
      redact_secrets("see https://x.example/cb#access_token=AT&state=1"),
      "see https://x.example/cb#access_token=[redacted]&state=1"
    );
    assert_eq!(
      redact_secrets("mail me@x.example, or http://x.example/a@b"),
      "mail me@x.example, or http://x.example/a@b"
    );
  }

  #[test]
  fn credentials_and_secret_fields_are_redacted() {
    assert_eq!(
      redact_secrets("HTTP 401: bad Authorization: Bearer abc.def-ghi, try again"),
      "HTTP 401: bad Authorization: Bearer [redacted], try again"
    );
    assert_eq!(
      redact_secrets("basic dXNlcjpwYXNz== and BEARER x"),
      "basic [redacted] and BEARER [redacted]"
    );
    assert_eq!(
      redact_secrets(r#"{"error":"bad","client_secret":"s3\"cr","x-api-key": "k"}"#),
      r#"{"error":"bad","client_secret":"[redacted]","x-api-key": "[redacted]"}"#
    );
    assert_eq!(
      redact_secrets("X-Api-Key: k123; password=pw token:t"),
      "X-Api-Key: [redacted]; password=[redacted] token:[redacted]"
    );
  }

  #[test]
  fn challenges_and_plain_prose_stay() {
    for text in [
      "HTTP 401: denied [WWW-Authenticate: Bearer realm=\"x\"; Mcp-Auth-Server: https://auth]",
      "HTTP 403: Forbidden [WWW-Authenticate: Bearer error=\"insufficient_scope\"]",
      "Request timeout after 1500ms",
      "MCP error -32601: Method not found",
      "missing key: name",
      "Legacy SSE endpoint origin mismatch: expected http://127.0.0.1:1, received http://127.0.0.2:1",
      "Bearer",
      "the token endpoint is down",
      "fetch failed: file:///etc/passwd: URL scheme is not allowed",
      "read /home/me/.secret: no such file",
    ] {
      assert_eq!(redact_secrets(text), text);
    }
  }

  const SECRET: &str = "S3cr3tV4lue";

  proptest::proptest! {
    #[test]
    fn a_planted_secret_never_survives(
      before in "(\\PC|[?&=:@/\"#]|Bearer |token=|://){0,20}",
      template in 0usize..6,
      after in "(\\PC|[?&=:@/\"#]|Bearer |token=|://){0,20}",
    ) {
      let planted = [
        "http://127.0.0.1:1/mcp?x=1&access_token=S",
        "https://me:S@h.example/mcp",
        "Authorization: Bearer S",
        "basic S",
        "{\"client_secret\":\"S\"}",
        "/messages?sig=S#x",
      ][template].replace('S', SECRET);
      let text = format!("{before} {planted} {after}");
      let once = redact_secrets(&text);
      proptest::prop_assert!(!once.contains(SECRET), "{text:?} -> {once:?}");
      let twice = redact_secrets(&once);
      proptest::prop_assert!(!twice.contains(SECRET));
      let _ = redact_url_for_log(&text);
    }
  }
}
