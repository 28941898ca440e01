//! Node's `path.win32`, for the functions A12's rules use when the host is Windows: both
//! `\` and `/` separate, a drive (`C:`) or a UNC share (`\\server\share`) roots a path, and
//! results are written with `\`.

fn is_separator(c: char) -> bool {
  c == '\\' || c == '/'
}

/// A path's root (`C:\`, `C:`, `\\server\share\`, `\`, or nothing), whether it is absolute,
/// and the rest.
fn split_root(path: &str) -> (String, bool, &str) {
  let mut chars = path.chars();
  let first = chars.next();
  let second = chars.next();
  match (first, second) {
    (Some(a), Some(b)) if is_separator(a) && is_separator(b) => {
      // \\server\share\rest: a UNC root, when both names are there.
      let inner = &path[2..];
      let mut names = inner.splitn(3, is_separator);
      match (names.next(), names.next()) {
        (Some(server), Some(share)) if !server.is_empty() && !share.is_empty() => {
          let taken = 2 + server.len() + 1 + share.len();
          let rest = path.get(taken..).unwrap_or("");
          let rest = rest.strip_prefix(is_separator).unwrap_or(rest);
          (format!("\\\\{server}\\{share}\\"), true, rest)
        }
        _ => ("\\".to_string(), true, &path[1..]),
      }
    }
    (Some(a), _) if is_separator(a) => ("\\".to_string(), true, &path[1..]),
    (Some(drive), Some(':')) if drive.is_ascii_alphabetic() => {
      let rest = &path[2..];
      match rest.strip_prefix(is_separator) {
        Some(rest) => (format!("{drive}:\\"), true, rest),
        None => (format!("{drive}:"), false, rest),
      }
    }
    _ => (String::new(), false, path),
  }
}

pub fn is_absolute(path: &str) -> bool {
  split_root(path).1
}

/// Path segments with `.`, empty ones and `..` folded (`..` kept at the start of a path
/// without a root), as both of Node's `path` flavours fold them.
pub fn fold_segments<'a>(
  segments: impl Iterator<Item = &'a str>,
  allow_above_root: bool,
) -> Vec<&'a str> {
  let mut folded: Vec<&str> = Vec::new();
  for segment in segments {
    match segment {
      "" | "." => {}
      ".." => match folded.last() {
        Some(&last) if last != ".." => {
          folded.pop();
        }
        _ if allow_above_root => folded.push(".."),
        _ => {}
      },
      segment => folded.push(segment),
    }
  }
  folded
}

fn normalize_segments(rest: &str, allow_above_root: bool) -> String {
  fold_segments(rest.split(is_separator), allow_above_root).join("\\")
}

pub fn normalize(path: &str) -> String {
  if path.is_empty() {
    return ".".to_string();
  }
  let (root, absolute, rest) = split_root(path);
  let mut tail = normalize_segments(rest, !absolute);
  if tail.is_empty() && !absolute {
    tail.push('.');
  }
  if !tail.is_empty() && rest.ends_with(is_separator) {
    tail.push('\\');
  }
  format!("{root}{tail}")
}

pub fn join(parts: &[&str]) -> String {
  let parts: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
  if parts.is_empty() {
    return ".".to_string();
  }
  normalize(&parts.join("\\"))
}

/// `path.win32.resolve(...parts)`, with `process_cwd` as `process.cwd()`: parts from the
/// right until one is absolute; a root without a drive takes the drive of what follows it
/// (the current directory's, in the end).
pub fn resolve(parts: &[&str], process_cwd: &str) -> String {
  let mut tail = String::new();
  let mut absolute = false;
  for part in parts.iter().rev().chain(std::iter::once(&process_cwd)) {
    if part.is_empty() {
      continue;
    }
    let (root, part_absolute, rest) = split_root(part);
    let has_drive = !root.is_empty() && root != "\\";
    if !absolute {
      tail = if tail.is_empty() {
        rest.to_string()
      } else {
        format!("{rest}\\{tail}")
      };
      absolute = part_absolute;
    }
    if absolute && has_drive {
      let drive = root.trim_end_matches('\\');
      return format!("{drive}\\{}", normalize_segments(&tail, false));
    }
  }
  format!("\\{}", normalize_segments(&tail, false))
}

/// The last segment's start, past the root (trailing separators ignored), and the end of
/// the path without them.
fn last_segment(path: &str) -> (usize, usize) {
  let (_, _, rest) = split_root(path);
  let root_len = path.len() - rest.len();
  let end = path.trim_end_matches(is_separator).len().max(root_len);
  let start = path[root_len..end]
    .rfind(is_separator)
    .map_or(root_len, |at| root_len + at + 1);
  (start, end)
}

pub fn dirname(path: &str) -> String {
  if path.is_empty() {
    return ".".to_string();
  }
  let (root, _, rest) = split_root(path);
  let root_len = path.len() - rest.len();
  let (start, _) = last_segment(path);
  let parent = path[root_len..start].trim_end_matches(is_separator);
  match (parent.is_empty(), root.is_empty()) {
    (true, true) => ".".to_string(),
    (true, false) => path[..root_len].to_string(),
    (false, _) => format!("{}{parent}", &path[..root_len]),
  }
}

pub fn basename(path: &str) -> String {
  let (start, end) = last_segment(path);
  path[start..end].to_string()
}

/// From the last `.` of the last segment; empty when that segment has no `.` past its
/// first character, or is `..`.
pub fn extname(path: &str) -> &str {
  let (start, end) = last_segment(path);
  let segment = &path[start..end];
  match segment.rfind('.') {
    Some(0) | None => "",
    Some(_) if segment == ".." => "",
    Some(_) if segment.bytes().all(|b| b == b'.') => &segment[segment.len() - 1..],
    Some(dot) => &segment[dot..],
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  /// Each case as Node 22's `path.win32` answers it.
  #[test]
  fn a12_paths_follow_node_path_win32() {
    assert!(is_absolute("C:\\x") && is_absolute("c:/x") && is_absolute("\\x"));
    assert!(is_absolute("\\\\server\\share") && is_absolute("/x"));
    assert!(!is_absolute("C:x") && !is_absolute("x\\y") && !is_absolute(""));

    assert_eq!(join(&["C:\\a", "b/c", "..\\d.cmd"]), "C:\\a\\b\\d.cmd");
    assert_eq!(join(&["a", "", "b"]), "a\\b");
    assert_eq!(join(&[]), ".");
    assert_eq!(normalize("C:/a//b/./"), "C:\\a\\b\\");
    assert_eq!(normalize("..\\a\\..\\.."), "..\\..");

    let cwd = "C:\\work\\project";
    assert_eq!(
      resolve(&["tools", "npx.cmd"], cwd),
      "C:\\work\\project\\tools\\npx.cmd"
    );
    assert_eq!(resolve(&["D:\\bin", "x.exe"], cwd), "D:\\bin\\x.exe");
    assert_eq!(resolve(&["\\bin", "x.exe"], cwd), "C:\\bin\\x.exe");
    assert_eq!(resolve(&["C:\\a", "..\\..\\b"], cwd), "C:\\b");
    assert_eq!(
      resolve(&["\\\\srv\\share\\dir", "x.cmd"], cwd),
      "\\\\srv\\share\\dir\\x.cmd"
    );

    assert_eq!(dirname("C:\\npm\\npx.cmd"), "C:\\npm");
    assert_eq!(dirname("C:\\npx.cmd"), "C:\\");
    assert_eq!(dirname("C:/a/b/"), "C:/a");
    assert_eq!(dirname("npx.cmd"), ".");
    assert_eq!(basename("C:\\npm\\npx.cmd"), "npx.cmd");
    assert_eq!(basename("C:npx.cmd"), "npx.cmd");
    assert_eq!(basename("dir/sub\\"), "sub");
    assert_eq!(extname("C:\\npm\\npx.CMD"), ".CMD");
    assert_eq!(extname("C:\\x.y\\.bashrc"), "");
    assert_eq!(extname("a\\b.tar.gz"), ".gz");
  }
}
