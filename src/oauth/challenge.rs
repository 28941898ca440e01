//! O2: what a 401 or 403 asks for, read from its `WWW-Authenticate` header (RFC 9110 §11.6.1,
//! RFC 6750 §3, RFC 9728 §5.1).

/// The `Bearer` challenge of an answer; every field is optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Challenge {
  /// RFC 9728: where the protected-resource metadata is.
  pub resource_metadata: Option<String>,
  /// The scopes the resource asks for, space-separated.
  pub scope: Option<String>,
  /// `invalid_token`, `insufficient_scope`, …
  pub error: Option<String>,
  pub error_description: Option<String>,
}

impl Challenge {
  /// The `Bearer` (or, RFC 9449, `DPoP`) challenge among those of `header`, if any.
  pub fn parse(header: &str) -> Option<Challenge> {
    let challenges = parse_challenges(header);
    let (_, params) = challenges.into_iter().find(|(scheme, _)| {
      scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("dpop")
    })?;
    let mut challenge = Challenge::default();
    for (name, value) in params {
      let slot = match name.to_ascii_lowercase().as_str() {
        "resource_metadata" => &mut challenge.resource_metadata,
        "scope" => &mut challenge.scope,
        "error" => &mut challenge.error,
        "error_description" => &mut challenge.error_description,
        _ => continue,
      };
      slot.get_or_insert(value);
    }
    Some(challenge)
  }

  /// A 403 that asks for more scopes (step-up), rather than refusing outright.
  pub fn is_insufficient_scope(&self) -> bool {
    self.error.as_deref() == Some("insufficient_scope")
  }
}

type Params = Vec<(String, String)>;

/// `scheme [token68 | param *("," param)] *("," challenge)`: the schemes with their params.
fn parse_challenges(header: &str) -> Vec<(String, Params)> {
  let mut out: Vec<(String, Params)> = Vec::new();
  let mut rest = header;
  loop {
    rest = rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
    if rest.is_empty() {
      return out;
    }
    let (word, after) = split_token(rest);
    if word.is_empty() {
      // Not a token: skip one character so a stray byte cannot stall the loop.
      let mut chars = rest.chars();
      chars.next();
      rest = chars.as_str();
      continue;
    }
    let after_spaces = after.trim_start();
    if let Some(value) = after_spaces
      .strip_prefix('=')
      .filter(|v| !v.starts_with('='))
    {
      // `name=value`: a param of the current challenge.
      let (value, remaining) = parse_value(value.trim_start());
      if let Some((_, params)) = out.last_mut() {
        params.push((word.to_string(), value));
      }
      rest = remaining;
    } else {
      // A scheme; a token68 after it (`Basic dXNlcg==`) carries nothing we read.
      out.push((word.to_string(), Vec::new()));
      rest = after_spaces;
      let (next, tail) = split_token(rest);
      let param_follows = tail.trim_start().strip_prefix('=').is_some_and(|v| {
        let v = v.trim_start();
        !v.starts_with('=') && !v.is_empty() && !v.starts_with(',')
      });
      if !next.is_empty() && !param_follows {
        rest = tail.trim_start_matches('=');
      }
    }
  }
}

fn is_token_char(c: char) -> bool {
  c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~/".contains(c)
}

fn split_token(text: &str) -> (&str, &str) {
  let end = text.find(|c: char| !is_token_char(c)).unwrap_or(text.len());
  text.split_at(end)
}

/// A token or a quoted string (with `\` escapes), and what follows it.
fn parse_value(text: &str) -> (String, &str) {
  let Some(quoted) = text.strip_prefix('"') else {
    let end = text
      .find(|c: char| c == ',' || c.is_ascii_whitespace())
      .unwrap_or(text.len());
    return (text[..end].to_string(), &text[end..]);
  };
  let mut value = String::new();
  let mut chars = quoted.char_indices();
  while let Some((i, c)) = chars.next() {
    match c {
      '\\' => {
        if let Some((_, escaped)) = chars.next() {
          value.push(escaped);
        }
      }
      '"' => return (value, &quoted[i + 1..]),
      _ => value.push(c),
    }
  }
  (value, "")
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn reads_the_bearer_params_rfc6750_and_rfc9728() {
    let challenge = Challenge::parse(
      r#"Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp""#,
    )
    .unwrap();
    assert_eq!(challenge.error.as_deref(), Some("invalid_token"));
    assert_eq!(
      challenge.error_description.as_deref(),
      Some("Missing Authorization header")
    );
    assert_eq!(
      challenge.resource_metadata.as_deref(),
      Some("http://localhost:3000/.well-known/oauth-protected-resource/mcp")
    );
    assert!(!challenge.is_insufficient_scope());
  }

  #[test]
  fn finds_bearer_among_several_challenges() {
    let challenge = Challenge::parse(
      r#"Basic realm="x", Newauth realm="apps", type=1, title="Login \"to\" apps", Bearer scope="mcp:basic mcp:write", error=insufficient_scope"#,
    )
    .unwrap();
    assert_eq!(challenge.scope.as_deref(), Some("mcp:basic mcp:write"));
    assert!(challenge.is_insufficient_scope());
  }

  #[test]
  fn token68_schemes_and_case_are_tolerated() {
    let challenge = Challenge::parse("Basic dXNlcjpwYXNz, bearer SCOPE=\"a\"").unwrap();
    assert_eq!(challenge.scope.as_deref(), Some("a"));
    assert_eq!(Challenge::parse("Bearer").unwrap(), Challenge::default());
  }

  #[test]
  fn rfc9449_dpop_challenges_count_too() {
    let challenge =
      Challenge::parse(r#"DPoP error="use_dpop_nonce", resource_metadata="http://x/m""#).unwrap();
    assert_eq!(challenge.error.as_deref(), Some("use_dpop_nonce"));
    assert_eq!(challenge.resource_metadata.as_deref(), Some("http://x/m"));
  }

  #[test]
  fn no_bearer_no_challenge() {
    assert_eq!(Challenge::parse(r#"Basic realm="x""#), None);
    assert_eq!(Challenge::parse(""), None);
    assert_eq!(Challenge::parse("\"\"==,,"), None);
  }

  #[test]
  fn first_value_of_a_repeated_param_wins() {
    let challenge = Challenge::parse(r#"Bearer scope="a", scope="b""#).unwrap();
    assert_eq!(challenge.scope.as_deref(), Some("a"));
  }
}
