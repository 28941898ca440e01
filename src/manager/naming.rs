//! MCP tool names as the agent spells them: `mcp_<server>_<tool>` (v12) and
//! `mcp__<server>_<tool>`, at most 64 characters (v18, A33).
use sha2::{Digest, Sha256};

/// Lowercases `part` and reduces it to `[a-z_]` (v12) or `[a-z0-9_]` (A65: the agent at
/// 18.3.4 keeps digits): every run of other characters becomes one `_`, and `_` runs
/// collapse and are trimmed.
pub fn sanitize_name_part(part: &str, keep_digits: bool) -> String {
  let mut out = String::with_capacity(part.len());
  for c in part.to_lowercase().chars() {
    if c.is_ascii_lowercase() || (keep_digits && c.is_ascii_digit()) {
      out.push(c);
    } else if !out.ends_with('_') {
      out.push('_');
    }
  }
  out.trim_matches('_').to_owned()
}

/// `mcp_<server>_<tool>`, without repeating the server when the tool name already starts
/// with it (`github` + `github_create_issue` → `mcp_github_create_issue`).
pub fn create_mcp_tool_name(server: &str, tool: &str) -> String {
  format!("mcp_{}", server_and_tool(server, tool, false))
}

/// Validators of model APIs refuse longer tool names.
const MAX_TOOL_NAME: usize = 64;
const HASH_CHARS: usize = 8;

/// A33: `mcp__<server>_<tool>` (A65: digits kept); a longer name keeps its first 55 characters and gains `_`
/// and 8 base-36 characters of a hash of the whole name, stable across processes.
pub fn create_v18_tool_name(server: &str, tool: &str) -> String {
  let name = format!("mcp__{}", server_and_tool(server, tool, true));
  if name.len() <= MAX_TOOL_NAME {
    return name;
  }
  let digest = Sha256::digest(name.as_bytes());
  let mut first = [0u8; 8];
  first.copy_from_slice(&digest[..8]);
  let hash: String = base36(u64::from_be_bytes(first))
    .chars()
    .take(HASH_CHARS)
    .collect();
  // Sanitized names are ASCII, so byte and character counts agree.
  let keep = MAX_TOOL_NAME - hash.len() - 1;
  format!("{}_{hash}", &name[..keep])
}

fn base36(mut n: u64) -> String {
  const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
  let mut out = Vec::new();
  loop {
    out.push(DIGITS[(n % 36) as usize]);
    n /= 36;
    if n == 0 {
      break;
    }
  }
  out.reverse();
  String::from_utf8_lossy(&out).into_owned()
}

/// `<server>_<tool>` from sanitized parts, the tool without a leading copy of the server.
fn server_and_tool(server: &str, tool: &str, keep_digits: bool) -> String {
  let mut s = sanitize_name_part(server, keep_digits);
  if s.is_empty() {
    s.push_str("server");
  }
  let mut t = sanitize_name_part(tool, keep_digits);
  if t.is_empty() {
    t.push_str("tool");
  }
  let tool_part = t.strip_prefix(&format!("{s}_")).unwrap_or(&t);
  format!("{s}_{tool_part}")
}

/// Splits `mcp_<server>_<tool>` at the first `_` after the prefix; only exact for server
/// names without `_`, which is as much as the name itself can tell.
pub fn parse_mcp_tool_name(name: &str) -> Option<(String, String)> {
  // A33: v18's `mcp__` and v12's `mcp_` alike.
  let rest = name
    .strip_prefix("mcp__")
    .or_else(|| name.strip_prefix("mcp_"))?;
  // A65: Claude Code's spelling `mcp__<server>__<tool>`; a minted server part has no `__`.
  let (server, tool) = rest.split_once("__").or_else(|| rest.split_once('_'))?;
  if server.is_empty() || tool.is_empty() {
    return None;
  }
  Some((server.to_owned(), tool.to_owned()))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn a33_v18_names_have_two_underscores_and_at_most_64_characters() {
    assert_eq!(
      create_v18_tool_name("GitHub", "github_create_issue"),
      "mcp__github_create_issue"
    );
    let long = create_v18_tool_name("a-very-long-server-name", &"tool_".repeat(20));
    assert_eq!(long.len(), 64);
    assert!(long.starts_with("mcp__a_very_long_server_name_tool_tool"));
    assert_eq!(&long[55..56], "_");
    assert!(long[56..]
      .bytes()
      .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()));
    // Stable, and distinct for names that share the first 55 characters.
    assert_eq!(
      long,
      create_v18_tool_name("a-very-long-server-name", &"tool_".repeat(20))
    );
    assert_ne!(
      long,
      create_v18_tool_name("a-very-long-server-name", &"tool_".repeat(21))
    );
    assert_eq!(
      parse_mcp_tool_name("mcp__github_create_issue"),
      Some(("github".into(), "create_issue".into()))
    );
  }

  #[test]
  fn a65_v18_names_keep_digits() {
    assert_eq!(
      create_v18_tool_name("context7", "query-docs"),
      "mcp__context7_query_docs"
    );
    assert_eq!(create_v18_tool_name("s3", "s3_get"), "mcp__s3_get");
    assert_eq!(
      create_mcp_tool_name("context7", "query-docs"),
      "mcp_context_query_docs"
    );
    let split = |name| parse_mcp_tool_name(name).map(|(s, t)| format!("{s}/{t}"));
    assert_eq!(
      split("mcp__context7__query_docs").as_deref(),
      Some("context7/query_docs")
    );
    assert_eq!(
      split("mcp__context7_query_docs").as_deref(),
      Some("context7/query_docs")
    );
  }

  #[test]
  fn sanitizes_parts() {
    assert_eq!(sanitize_name_part("GitHub", false), "github");
    assert_eq!(sanitize_name_part("my-server.v2", false), "my_server_v");
    assert_eq!(sanitize_name_part("__a__b__", false), "a_b");
    assert_eq!(sanitize_name_part("a - _ b", false), "a_b");
    assert_eq!(sanitize_name_part("123", false), "");
    assert_eq!(sanitize_name_part("my-server.v2", true), "my_server_v2");
    assert_eq!(sanitize_name_part("123", true), "123");
    assert_eq!(sanitize_name_part("", false), "");
  }

  #[test]
  fn creates_names() {
    let cases = [
      ("GitHub", "create_issue", "mcp_github_create_issue"),
      ("github", "github_create_issue", "mcp_github_create_issue"),
      ("GitHub", "GitHub-Create-Issue", "mcp_github_create_issue"),
      ("my-server.v2", "Tool 9 X", "mcp_my_server_v_tool_x"),
      ("", "", "mcp_server_tool"),
      ("___", "---", "mcp_server_tool"),
      ("s3", "get2", "mcp_s_get"),
      ("42", "list", "mcp_server_list"),
      ("fs", "99", "mcp_fs_tool"),
      // Only one leading copy of the server is stripped.
      ("a", "a_a_b", "mcp_a_a_b"),
      // A prefix that is not followed by `_` is part of the tool name.
      ("git", "github_x", "mcp_git_github_x"),
      // The tool may equal the server; nothing to strip without the `_`.
      ("git", "git", "mcp_git_git"),
    ];
    for (server, tool, want) in cases {
      assert_eq!(
        create_mcp_tool_name(server, tool),
        want,
        "{server:?} {tool:?}"
      );
    }
  }

  #[test]
  fn handles_unicode() {
    assert_eq!(sanitize_name_part("Ünïcödé", false), "n_c_d");
    assert_eq!(create_mcp_tool_name("Сервер", "ツール"), "mcp_server_tool");
    assert_eq!(
      create_mcp_tool_name("café", "naïve—tool"),
      "mcp_caf_na_ve_tool"
    );
    // `İ` lowercases to `i` plus a combining dot, which becomes `_` and is trimmed.
    assert_eq!(sanitize_name_part("İ", false), "i");
  }

  #[test]
  fn parses_names() {
    assert_eq!(
      parse_mcp_tool_name("mcp_github_create_issue"),
      Some(("github".to_owned(), "create_issue".to_owned()))
    );
    assert_eq!(
      parse_mcp_tool_name("mcp_a_b"),
      Some(("a".to_owned(), "b".to_owned()))
    );
    for bad in [
      "github_create_issue",
      "mcp_",
      "mcp_github",
      "mcp__tool",
      "mcp_github_",
      "MCP_a_b",
      "",
    ] {
      assert_eq!(parse_mcp_tool_name(bad), None, "{bad:?}");
    }
  }

  #[test]
  fn round_trips_servers_without_underscore() {
    for (server, tool) in [
      ("github", "create_issue"),
      ("GitHub", "github_list"),
      ("fs", "read"),
      ("x", ""),
    ] {
      let name = create_mcp_tool_name(server, tool);
      let (s, t) = parse_mcp_tool_name(&name).unwrap();
      assert_eq!(create_mcp_tool_name(&s, &t), name);
      assert_eq!(s, sanitize_name_part(server, false));
    }
  }
}
