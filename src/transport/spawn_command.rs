//! A11/A12: the argv and spawn flags of a stdio server, decided as the v18 agent's
//! `resolveStdioSpawnCommand` decides them. Windows gets a PATH/PATHEXT walk, npm's `.cmd`
//! shims run through `node` directly, and whatever is left goes through `cmd.exe` with a
//! line quoted so that cmd passes every argument through unchanged.
//!
//! Paths follow the host's `node:path` (`path.win32` on Windows, else `path.posix`), as
//! the agent's do, so every Windows branch runs, and is tested, on any host. The file
//! system is reached only through `Files`.

/// What the decision needs of the file system.
pub trait Files {
  /// Whether `path` exists (as `fs.access`: a directory counts).
  fn exists(&self, path: &str) -> bool;
  /// The text of the file at `path`; `None` when it cannot be read.
  fn read_text(&self, path: &str) -> Option<String>;
}

/// The host's file system (blocking calls: run them off the JS thread).
pub struct HostFiles;

impl Files for HostFiles {
  fn exists(&self, path: &str) -> bool {
    // A NUL byte or an unreadable parent is an error here, as it is for `fs.access`.
    std::fs::metadata(path).is_ok()
  }

  fn read_text(&self, path: &str) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    // Shims are ASCII in practice; a stray byte must not hide the rest of the text.
    Some(String::from_utf8_lossy(&bytes).into_owned())
  }
}

/// What the child is spawned with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnCommand {
  pub cmd: Vec<String>,
  /// Windows only (absent elsewhere).
  pub windows_hide: Option<bool>,
  pub detached: bool,
  /// Set only for a `cmd.exe` line, which must reach cmd exactly as built.
  pub windows_verbatim_arguments: bool,
}

/// A12 (5): what cannot be put on a cmd.exe line at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpawnCommandError {
  #[error("Windows batch MCP command cannot contain NUL, CR, or LF characters")]
  BatchCommand,
  #[error("Windows batch MCP argument cannot contain NUL, CR, or LF characters")]
  BatchArgument,
}

/// Which rules apply: A12's for `win32`, A11's plain argv for every other platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
  Windows,
  Other { detached: bool },
}

/// A11: an omitted platform is not `win32` (the spec says so outright), and it is the host's
/// platform that decides `detached` then: the host is where the child runs.
pub fn target(platform: Option<&str>, host_platform: &str) -> Target {
  match platform {
    Some("win32") => Target::Windows,
    Some(platform) => Target::Other {
      detached: platform != "darwin",
    },
    None => Target::Other {
      detached: host_platform != "darwin",
    },
  }
}

/// A11: not Windows: the command and its arguments as they are.
pub fn plain_command(command: &str, args: &[String], detached: bool) -> SpawnCommand {
  SpawnCommand {
    cmd: std::iter::once(command.to_string())
      .chain(args.iter().cloned())
      .collect(),
    windows_hide: None,
    detached,
    windows_verbatim_arguments: false,
  }
}

/// The child's environment as the caller gave it; `None` values are unset.
#[derive(Debug, Clone, Default)]
pub struct Environment(Vec<(String, Option<String>)>);

impl Environment {
  pub fn new(vars: Vec<(String, Option<String>)>) -> Self {
    Environment(vars)
  }

  /// A12: the exact name first, else the first name equal to it in any case (Windows names
  /// are case-insensitive; a JS object's keys are not).
  pub fn get(&self, name: &str) -> Option<&str> {
    let set = || {
      self
        .0
        .iter()
        .filter_map(|(key, value)| Some((key.as_str(), value.as_deref()?)))
    };
    if let Some((_, value)) = set().find(|(key, _)| *key == name) {
      return Some(value);
    }
    let lower = name.to_lowercase();
    set()
      .find(|(key, _)| key.to_lowercase() == lower)
      .map(|(_, value)| value)
  }
}

/// A12: everything the Windows rules read.
#[derive(Debug, Clone)]
pub struct WindowsRequest {
  pub command: String,
  pub args: Vec<String>,
  pub cwd: String,
  pub env: Environment,
  /// `hostHasInheritableConsole ?? false`.
  pub host_has_inheritable_console: bool,
  /// What a relative `cwd` is relative to (`process.cwd()`).
  pub process_cwd: String,
}

const DEFAULT_PATHEXT: [&str; 4] = [".COM", ".EXE", ".BAT", ".CMD"];

/// JS's `\s` and `String.prototype.trim` set: Unicode White_Space without U+0085, plus the BOM.
fn is_js_space(c: char) -> bool {
  (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// A12 (1): `PATHEXT` split on `;`, trimmed, `.`-prefixed; the default when it leaves none.
fn path_extensions(env: &Environment) -> Vec<String> {
  let parsed: Vec<String> = env
    .get("PATHEXT")
    .unwrap_or("")
    .split(';')
    .map(|part| part.trim_matches(is_js_space))
    .filter(|part| !part.is_empty())
    .map(|part| {
      if part.starts_with('.') {
        part.to_string()
      } else {
        format!(".{part}")
      }
    })
    .collect();
  if parsed.is_empty() {
    return DEFAULT_PATHEXT.iter().map(|ext| ext.to_string()).collect();
  }
  parsed
}

fn has_path_segment(command: &str) -> bool {
  command.contains('/') || command.contains('\\') || host_path::is_absolute(command)
}

fn has_executable_extension(command: &str, extensions: &[String]) -> bool {
  let ext = host_path::extname(command).to_lowercase();
  !ext.is_empty()
    && extensions
      .iter()
      .any(|candidate| candidate.to_lowercase() == ext)
}

fn is_batch(command: &str) -> bool {
  matches!(
    host_path::extname(command).to_lowercase().as_str(),
    ".cmd" | ".bat"
  )
}

impl WindowsRequest {
  /// A12: the first rule that applies, (3) to (5); `files` answers (2)'s and (3)'s checks.
  pub fn resolve(&self, files: &impl Files) -> Result<SpawnCommand, SpawnCommandError> {
    let windows_hide = Some(!self.host_has_inheritable_console);
    let resolved = self.resolve_path(files);
    let command = resolved.as_deref().unwrap_or(&self.command);
    let with_args = |first: Vec<String>, args: &[String]| SpawnCommand {
      cmd: first.into_iter().chain(args.iter().cloned()).collect(),
      windows_hide,
      detached: false,
      windows_verbatim_arguments: false,
    };
    if let Some(prefix) = self.npm_shim(command, files) {
      return Ok(with_args(prefix, &self.args));
    }
    if resolved.is_some() && !is_batch(command) {
      return Ok(with_args(vec![command.to_string()], &self.args));
    }
    let comspec = self
      .env
      .get("COMSPEC")
      .filter(|comspec| !comspec.is_empty())
      .unwrap_or("cmd.exe");
    let line = cmd_line(command, &self.args)?;
    let shell = [comspec, "/d", "/e:ON", "/v:OFF", "/c"].map(String::from);
    Ok(SpawnCommand {
      windows_verbatim_arguments: true,
      ..with_args(shell.into(), &[line])
    })
  }

  /// A12 (1)–(2): the file the command names, if found; an extension-bearing command that
  /// was not found is kept as it is (Windows would run it as named), anything else is `None`.
  fn resolve_path(&self, files: &impl Files) -> Option<String> {
    let extensions = path_extensions(&self.env);
    let has_ext = has_executable_extension(&self.command, &extensions);
    let candidates: Vec<String> = if has_ext {
      vec![self.command.clone()]
    } else {
      extensions
        .iter()
        .map(|ext| format!("{}{ext}", self.command))
        .collect()
    };
    let found = if has_path_segment(&self.command) {
      candidates
        .iter()
        .map(|candidate| {
          if host_path::is_absolute(candidate) {
            candidate.clone()
          } else {
            host_path::resolve(&[&self.cwd, candidate], &self.process_cwd)
          }
        })
        .find(|path| files.exists(path))
    } else {
      // cmd.exe's order for a bare name: the current directory, then PATH, so a
      // project-local shim wins over a global one of the same name.
      let path = self.env.get("PATH").unwrap_or("");
      let dirs =
        std::iter::once(self.cwd.as_str()).chain(path.split(';').filter(|d| !d.is_empty()));
      dirs
        .flat_map(|dir| {
          candidates
            .iter()
            .map(move |candidate| host_path::join(&[dir, candidate]))
        })
        .find(|path| files.exists(path))
    };
    found.or_else(|| has_ext.then(|| self.command.clone()))
  }

  /// A12 (3): an npm (cmd-shim) `.cmd` whose interpreter is node becomes `node <script>`,
  /// which keeps cmd.exe, and its mangling of arguments, out of the way. The interpreter
  /// and script prefix is returned.
  fn npm_shim(&self, command: &str, files: &impl Files) -> Option<Vec<String>> {
    if !is_batch(command) || !has_path_segment(command) {
      return None;
    }
    let name = host_path::basename(command);
    let stem = &name[..name.len() - host_path::extname(&name).len()];
    // A12 leaves npx to cmd.exe whatever its shim holds, as the agent does.
    if stem.to_lowercase() == "npx" {
      return None;
    }
    let shim_path = host_path::resolve(&[&self.cwd, command], &self.process_cwd);
    let content = files.read_text(&shim_path)?;
    let program = shim::program(&content)?;
    // No character but `E` and `X` lowercases to `e` or `x`, so lowercasing first and then
    // dropping `.exe` is the agent's order (drop, then lowercase) in effect.
    let program = host_path::basename(program).to_lowercase();
    if program.strip_suffix(".exe").unwrap_or(&program) != "node" {
      return None;
    }
    let rest = shim::script(&content)?;
    let shim_dir = host_path::dirname(&shim_path);
    let parts = rest.split(['\\', '/']).filter(|part| !part.is_empty());
    let script = host_path::join(
      &std::iter::once(shim_dir.as_str())
        .chain(parts)
        .collect::<Vec<_>>(),
    );
    let sibling_node = host_path::join(&[&shim_dir, "node.exe"]);
    let node = if files.exists(&sibling_node) {
      sibling_node
    } else {
      "node".to_string()
    };
    Some(vec![node, script])
  }
}

/// Reading a cmd-shim `.cmd` file.
mod shim {
  use super::is_js_space;

  /// `prefix` at the start of `text`, ASCII letters in any case.
  fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head
      .eq_ignore_ascii_case(prefix)
      .then(|| &text[prefix.len()..])
  }

  /// One or more JS whitespace characters at the start of `text`, skipped.
  fn skip_space(text: &str) -> Option<&str> {
    let rest = text.trim_start_matches(is_js_space);
    (rest.len() < text.len()).then_some(rest)
  }

  /// Up to the next `"`, and what follows that quote.
  fn quoted_value(text: &str) -> Option<(&str, &str)> {
    let end = text.find('"')?;
    Some((&text[..end], &text[end + 1..]))
  }

  /// The value of the first `SET "_prog=<v>"` whose `<v>` does not start with `%`: the
  /// shim's fallback interpreter. The other assignment (`%dp0%\node.exe`, taken when that
  /// file exists) starts with `%`.
  pub fn program(content: &str) -> Option<&str> {
    content
      .char_indices()
      .filter(|(_, c)| c.eq_ignore_ascii_case(&'s'))
      .find_map(|(at, _)| {
        let rest = strip_prefix_ci(&content[at..], "set")?;
        let rest = strip_prefix_ci(skip_space(rest)?, "\"_prog=")?;
        let (value, _) = quoted_value(rest)?;
        let first = value.chars().next()?;
        (first != '%').then_some(value)
      })
  }

  /// `<rest>` of the first `"%_prog%" "<target>" %*` when `<target>` is `%dp0%<rest>`: the
  /// script, relative to the shim's directory.
  pub fn script(content: &str) -> Option<&str> {
    let target = content.match_indices('"').find_map(|(at, _)| {
      let rest = strip_prefix_ci(&content[at..], "\"%_prog%\"")?;
      let rest = skip_space(rest)?.strip_prefix('"')?;
      let (target, rest) = quoted_value(rest)?;
      skip_space(rest)?.strip_prefix("%*")?;
      (!target.is_empty()).then_some(target)
    })?;
    let rest = strip_prefix_ci(target, "%dp0%")?;
    // The agent's pattern ends in `(.*)$`: a line break in the path is no match.
    if rest.contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
      return None;
    }
    Some(rest)
  }
}

/// A12 (5): `""` + Q(command) + `"`, each argument after a space, and the closing `"`: cmd
/// drops the outermost pair of quotes and runs the rest as the command line.
fn cmd_line(command: &str, args: &[String]) -> Result<String, SpawnCommandError> {
  let control = |text: &str| text.contains(['\0', '\r', '\n']);
  if control(command) {
    return Err(SpawnCommandError::BatchCommand);
  }
  if args.iter().any(|arg| control(arg)) {
    return Err(SpawnCommandError::BatchArgument);
  }
  let mut line = format!("\"\"{}\"", quote_body(command));
  for arg in args {
    line.push(' ');
    line.push_str(&cmd_argument(arg));
  }
  line.push('"');
  Ok(line)
}

/// A(arg): bare when nothing in it means anything to cmd or to the argv parser.
fn cmd_argument(arg: &str) -> String {
  let safe = |b: u8| b.is_ascii_alphanumeric() || b"#$*+-./:?@\\_".contains(&b);
  if !arg.is_empty() && !arg.ends_with('\\') && arg.bytes().all(safe) {
    return arg.to_string();
  }
  format!("\"{}\"", quote_body(arg))
}

/// Q(text): the inside of a quoted cmd.exe word. `%` becomes `%%cd:~,%`, which cmd expands
/// to a lone `%` where a `%` of its own would start a variable; a `"` becomes `""` (cmd
/// keeps quoting across it) after doubling the backslashes before it, and a trailing run of
/// backslashes is doubled, so the program's argv parser reads them literally.
fn quote_body(text: &str) -> String {
  let mut out = String::with_capacity(text.len() + 2);
  let mut backslashes = 0;
  for c in text.chars() {
    match c {
      '\\' => backslashes += 1,
      '"' => {
        out.extend(std::iter::repeat_n('\\', backslashes * 2));
        backslashes = 0;
        out.push_str("\"\"");
      }
      other => {
        out.extend(std::iter::repeat_n('\\', backslashes));
        backslashes = 0;
        match other {
          '%' => out.push_str("%%cd:~,%"),
          other => out.push(other),
        }
      }
    }
  }
  out.extend(std::iter::repeat_n('\\', backslashes * 2));
  out
}

/// The host's `node:path`: `path.win32` where the host is Windows, else `path.posix`.
mod host_path {
  use super::posix_path;
  use crate::transport::win32_path;

  fn win32() -> bool {
    crate::sys::build_platform() == "win32"
  }

  pub fn is_absolute(path: &str) -> bool {
    if win32() {
      win32_path::is_absolute(path)
    } else {
      posix_path::is_absolute(path)
    }
  }

  pub fn join(parts: &[&str]) -> String {
    if win32() {
      win32_path::join(parts)
    } else {
      posix_path::join(parts)
    }
  }

  pub fn resolve(parts: &[&str], process_cwd: &str) -> String {
    if win32() {
      win32_path::resolve(parts, process_cwd)
    } else {
      posix_path::resolve(parts, process_cwd)
    }
  }

  pub fn dirname(path: &str) -> String {
    if win32() {
      win32_path::dirname(path)
    } else {
      posix_path::dirname(path)
    }
  }

  pub fn basename(path: &str) -> String {
    if win32() {
      win32_path::basename(path)
    } else {
      posix_path::basename(path)
    }
  }

  pub fn extname(path: &str) -> &str {
    if win32() {
      win32_path::extname(path)
    } else {
      posix_path::extname(path)
    }
  }
}

/// Node's `path.posix`, for the functions the rules use. Only `/`
/// and `.` matter to it, so byte indices are safe on UTF-8.
mod posix_path {
  pub fn is_absolute(path: &str) -> bool {
    path.starts_with('/')
  }

  /// The segments of `path` with `.`, empty ones and `..` folded (`..` kept at the start of
  /// a relative path), joined by `/`.
  fn normalize_segments(path: &str, allow_above_root: bool) -> String {
    crate::transport::win32_path::fold_segments(path.split('/'), allow_above_root).join("/")
  }

  pub fn normalize(path: &str) -> String {
    if path.is_empty() {
      return ".".to_string();
    }
    let absolute = is_absolute(path);
    let trailing = path.ends_with('/');
    let mut normalized = normalize_segments(path, !absolute);
    if normalized.is_empty() {
      return match (absolute, trailing) {
        (true, _) => "/".to_string(),
        (false, true) => "./".to_string(),
        (false, false) => ".".to_string(),
      };
    }
    if trailing {
      normalized.push('/');
    }
    if absolute {
      format!("/{normalized}")
    } else {
      normalized
    }
  }

  pub fn join(parts: &[&str]) -> String {
    let parts: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
      return ".".to_string();
    }
    normalize(&parts.join("/"))
  }

  /// `path.resolve(...parts)`, with `process_cwd` as `process.cwd()`.
  pub fn resolve(parts: &[&str], process_cwd: &str) -> String {
    let mut joined = String::new();
    let mut absolute = false;
    for part in parts.iter().rev().chain(std::iter::once(&process_cwd)) {
      if part.is_empty() {
        continue;
      }
      joined = format!("{part}/{joined}");
      absolute = is_absolute(part);
      if absolute {
        break;
      }
    }
    let normalized = normalize_segments(&joined, !absolute);
    match (absolute, normalized.is_empty()) {
      (true, _) => format!("/{normalized}"),
      (false, true) => ".".to_string(),
      (false, false) => normalized,
    }
  }

  pub fn dirname(path: &str) -> String {
    let bytes = path.as_bytes();
    if bytes.is_empty() {
      return ".".to_string();
    }
    let has_root = bytes[0] == b'/';
    let mut end = None;
    let mut matched_slash = true;
    for i in (1..bytes.len()).rev() {
      if bytes[i] == b'/' {
        if !matched_slash {
          end = Some(i);
          break;
        }
      } else {
        matched_slash = false;
      }
    }
    match end {
      None if has_root => "/".to_string(),
      None => ".".to_string(),
      Some(1) if has_root => "//".to_string(),
      Some(end) => path[..end].to_string(),
    }
  }

  pub fn basename(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
      Some(slash) => trimmed[slash + 1..].to_string(),
      None => trimmed.to_string(),
    }
  }

  /// From the last `.` of the last segment (trailing slashes ignored); empty when that
  /// segment has no `.` past its first character, or is `..`.
  pub fn extname(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    let start = trimmed.rfind('/').map_or(0, |slash| slash + 1);
    let segment = &trimmed[start..];
    match segment.rfind('.') {
      Some(0) | None => "",
      Some(_) if segment == ".." => "",
      Some(_) if segment.bytes().all(|b| b == b'.') => &segment[segment.len() - 1..],
      Some(dot) => &segment[dot..],
    }
  }
}

#[cfg(test)]
mod tests {
  use std::collections::BTreeMap;

  use super::*;

  /// An in-memory file system: the files there are, with their text.
  #[derive(Default)]
  struct Disk(BTreeMap<String, String>);

  impl Disk {
    fn with(files: &[(&str, &str)]) -> Self {
      Disk(
        files
          .iter()
          .map(|(path, text)| (path.to_string(), text.to_string()))
          .collect(),
      )
    }
  }

  impl Files for Disk {
    fn exists(&self, path: &str) -> bool {
      self.0.contains_key(path)
    }
    fn read_text(&self, path: &str) -> Option<String> {
      self.0.get(path).cloned()
    }
  }

  fn env(vars: &[(&str, Option<&str>)]) -> Environment {
    Environment::new(
      vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.map(String::from)))
        .collect(),
    )
  }

  fn request(command: &str, args: &[&str], vars: &[(&str, Option<&str>)]) -> WindowsRequest {
    WindowsRequest {
      command: command.to_string(),
      args: args.iter().map(|a| a.to_string()).collect(),
      cwd: "/project".to_string(),
      env: env(vars),
      host_has_inheritable_console: false,
      process_cwd: "/host".to_string(),
    }
  }

  fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
  }

  fn direct(cmd: &[&str]) -> SpawnCommand {
    SpawnCommand {
      cmd: strings(cmd),
      windows_hide: Some(true),
      detached: false,
      windows_verbatim_arguments: false,
    }
  }

  fn through_cmd(comspec: &str, line: &str) -> SpawnCommand {
    SpawnCommand {
      cmd: strings(&[comspec, "/d", "/e:ON", "/v:OFF", "/c", line]),
      windows_hide: Some(true),
      detached: false,
      windows_verbatim_arguments: true,
    }
  }

  /// A cmd-shim file as npm writes it for a node script.
  fn npm_shim(script: &str) -> String {
    format!(
      "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\nIF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\nendLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\{script}\" %*\r\n"
    )
  }

  #[test]
  fn a11_platforms_other_than_win32_run_the_command_as_given() {
    assert_eq!(
      target(Some("linux"), "linux"),
      Target::Other { detached: true }
    );
    assert_eq!(
      target(Some("darwin"), "linux"),
      Target::Other { detached: false }
    );
    assert_eq!(
      target(Some("freebsd"), "darwin"),
      Target::Other { detached: true }
    );
    assert_eq!(target(Some("win32"), "linux"), Target::Windows);
    assert_eq!(target(None, "linux"), Target::Other { detached: true });
    assert_eq!(target(None, "darwin"), Target::Other { detached: false });
    // Omitted is never win32, even on a Windows host.
    assert_eq!(target(None, "win32"), Target::Other { detached: true });
    let args = strings(&["a b", "%x%"]);
    assert_eq!(
      plain_command("npx", &args, true),
      SpawnCommand {
        cmd: strings(&["npx", "a b", "%x%"]),
        windows_hide: None,
        detached: true,
        windows_verbatim_arguments: false,
      }
    );
  }

  #[test]
  fn a12_env_names_match_exactly_first_then_in_any_case() {
    let vars = env(&[("Path", Some("/mixed")), ("PATH", Some("/exact"))]);
    assert_eq!(vars.get("PATH"), Some("/exact"));
    let vars = env(&[("path", Some("/lower")), ("Path", Some("/mixed"))]);
    assert_eq!(vars.get("PATH"), Some("/lower"));
    // An undefined value is an unset variable, whichever way it is spelt.
    let vars = env(&[("PATH", None), ("path", None), ("Path", Some("/mixed"))]);
    assert_eq!(vars.get("PATH"), Some("/mixed"));
    assert_eq!(env(&[("PATH", None)]).get("PATH"), None);
    assert_eq!(env(&[]).get("PATH"), None);
    assert_eq!(env(&[("PATH", Some(""))]).get("PATH"), Some(""));
  }

  #[test]
  fn a12_1_pathext_is_split_trimmed_and_dot_prefixed_with_a_default() {
    let exts = |value: Option<&str>| path_extensions(&env(&[("PATHEXT", value)]));
    assert_eq!(exts(None), strings(&[".COM", ".EXE", ".BAT", ".CMD"]));
    assert_eq!(exts(Some("")), strings(&[".COM", ".EXE", ".BAT", ".CMD"]));
    assert_eq!(
      exts(Some(" ; ;\u{feff}")),
      strings(&[".COM", ".EXE", ".BAT", ".CMD"])
    );
    assert_eq!(
      exts(Some(" .Exe ;cmd;;\t.PS1\n")),
      strings(&[".Exe", ".cmd", ".PS1"])
    );
    assert_eq!(
      path_extensions(&env(&[("pathext", Some(".JS"))])),
      strings(&[".JS"])
    );
  }

  #[test]
  fn a12_1_the_extension_is_checked_in_any_case_and_decides_the_candidates() {
    let exts = strings(&[".COM", ".EXE"]);
    assert!(has_executable_extension("tool.exe", &exts));
    assert!(has_executable_extension("C:/bin/tool.ExE", &exts));
    assert!(!has_executable_extension("tool.cmd", &exts));
    assert!(!has_executable_extension("tool", &exts));
    assert!(!has_executable_extension(".exe", &exts));
    assert!(!has_executable_extension("tool.exe/", &[]));
    // With an extension only the command itself is looked for; without, command + each.
    let disk = Disk::with(&[("/project/tool.COM", ""), ("/project/tool.exe.EXE", "")]);
    let req = request("tool", &[], &[("PATHEXT", Some(".COM;.EXE"))]);
    assert_eq!(
      req.resolve_path(&disk).as_deref(),
      Some("/project/tool.COM")
    );
    let req = request("tool.exe", &[], &[("PATHEXT", Some(".COM;.EXE"))]);
    assert_eq!(req.resolve_path(&disk).as_deref(), Some("tool.exe"));
  }

  #[test]
  fn a12_2_a_command_with_a_path_segment_is_resolved_against_cwd() {
    let disk = Disk::with(&[
      ("/project/bin/tool.EXE", ""),
      ("/project/bin/tool.CMD", ""),
      ("/abs/tool.BAT", ""),
      ("/project/C:\\tools\\x.EXE", ""),
    ]);
    // The first PATHEXT candidate that exists wins.
    let req = request("./bin/tool", &[], &[]);
    assert_eq!(
      req.resolve_path(&disk).as_deref(),
      Some("/project/bin/tool.EXE")
    );
    let req = request("bin/../bin/tool", &[], &[("PATHEXT", Some(".CMD;.EXE"))]);
    assert_eq!(
      req.resolve_path(&disk).as_deref(),
      Some("/project/bin/tool.CMD")
    );
    // An absolute candidate is taken as it is, not normalised.
    let req = request("/abs/tool", &[], &[]);
    assert_eq!(req.resolve_path(&disk).as_deref(), Some("/abs/tool.BAT"));
    // A backslash is a path segment, but not a separator to the host's path module.
    let req = request("C:\\tools\\x", &[], &[]);
    assert_eq!(
      req.resolve_path(&disk).as_deref(),
      Some("/project/C:\\tools\\x.EXE")
    );
    // Not found: kept with an extension, unresolved without; PATH is not searched.
    let with_path = [("PATH", Some("/abs"))];
    let req = request("./missing/tool", &[], &with_path);
    assert_eq!(req.resolve_path(&disk), None);
    let req = request("./missing/tool.exe", &[], &with_path);
    assert_eq!(
      req.resolve_path(&disk).as_deref(),
      Some("./missing/tool.exe")
    );
    // A relative cwd is relative to the host's working directory.
    let disk = Disk::with(&[("/host/sub/bin/tool.EXE", "")]);
    let req = WindowsRequest {
      cwd: "sub".to_string(),
      ..request("bin/tool", &[], &[])
    };
    assert_eq!(
      req.resolve_path(&disk).as_deref(),
      Some("/host/sub/bin/tool.EXE")
    );
  }

  #[test]
  fn a12_2_a_bare_name_is_searched_in_cwd_then_path_dirs_outer() {
    let disk = Disk::with(&[
      ("/a/tool.CMD", ""),
      ("/b/tool.EXE", ""),
      ("/b/tool.COM", ""),
      ("/project/local.BAT", ""),
      ("/a/local.EXE", ""),
    ]);
    let path = [("Path", Some(";/a;;/b;"))];
    // Directories are the outer loop: /a's .CMD beats /b's .COM and .EXE.
    let req = request("tool", &[], &path);
    assert_eq!(req.resolve_path(&disk).as_deref(), Some("/a/tool.CMD"));
    // cwd comes first.
    let req = request("local", &[], &path);
    assert_eq!(
      req.resolve_path(&disk).as_deref(),
      Some("/project/local.BAT")
    );
    let req = request("missing", &[], &path);
    assert_eq!(req.resolve_path(&disk), None);
    let req = request("missing.exe", &[], &path);
    assert_eq!(req.resolve_path(&disk).as_deref(), Some("missing.exe"));
    // PATH entries are joined and normalised as the host's path.join does.
    let disk = Disk::with(&[("rel/dir/tool.EXE", "")]);
    let req = request("tool", &[], &[("PATH", Some("./rel//dir/"))]);
    assert_eq!(req.resolve_path(&disk).as_deref(), Some("rel/dir/tool.EXE"));
    // Case-sensitive disks see PATHEXT's spelling.
    let disk = Disk::with(&[("/project/tool.exe", "")]);
    assert_eq!(request("tool", &[], &[]).resolve_path(&disk), None);
  }

  #[test]
  fn a12_windows_hide_follows_the_host_console_and_detached_is_false() {
    let disk = Disk::with(&[("/project/tool.EXE", "")]);
    let req = request("tool", &["x"], &[]);
    assert_eq!(req.resolve(&disk), Ok(direct(&["/project/tool.EXE", "x"])));
    let req = WindowsRequest {
      host_has_inheritable_console: true,
      ..req
    };
    let resolved = req.resolve(&disk).ok();
    assert_eq!(resolved.as_ref().and_then(|c| c.windows_hide), Some(false));
    assert_eq!(resolved.map(|c| c.detached), Some(false));
  }

  #[test]
  fn a12_3_an_npm_shim_runs_its_script_with_node() {
    let shim = npm_shim("node_modules\\@scope\\pkg\\bin\\cli.js");
    let disk = Disk::with(&[("/project/node_modules/.bin/tool.cmd", &shim)]);
    let req = request("node_modules/.bin/tool.cmd", &["--flag", "a b"], &[]);
    assert_eq!(
      req.resolve(&disk),
      Ok(direct(&[
        "node",
        "/project/node_modules/.bin/node_modules/@scope/pkg/bin/cli.js",
        "--flag",
        "a b",
      ]))
    );
    // The shim directory's node.exe, when there is one.
    let disk = Disk::with(&[
      ("/project/node_modules/.bin/tool.cmd", &shim),
      ("/project/node_modules/.bin/node.exe", ""),
    ]);
    assert_eq!(
      req.resolve(&disk).map(|c| c.cmd),
      Ok(strings(&[
        "/project/node_modules/.bin/node.exe",
        "/project/node_modules/.bin/node_modules/@scope/pkg/bin/cli.js",
        "--flag",
        "a b",
      ]))
    );
  }

  #[test]
  fn a12_3_a_shim_found_on_path_or_named_bat_also_counts() {
    let shim = npm_shim("..\\pkg/cli.js");
    let disk = Disk::with(&[("/npm/tool.BAT", &shim)]);
    let req = request("tool", &[], &[("PATH", Some("/npm"))]);
    assert_eq!(
      req.resolve(&disk).map(|c| c.cmd),
      Ok(strings(&["node", "/pkg/cli.js"]))
    );
  }

  #[test]
  fn a12_3_the_shim_program_must_be_node() {
    let program = |text: &str| shim::program(text).map(String::from);
    assert_eq!(program(&npm_shim("x.js")).as_deref(), Some("node"));
    assert_eq!(
      program("set\t\"_PROG=C:/bin/Node.EXE\"").as_deref(),
      Some("C:/bin/Node.EXE")
    );
    assert_eq!(program("SET\"_prog=node\""), None);
    assert_eq!(
      program("SET \"_prog=\" SET \"_prog=node\"").as_deref(),
      Some("node")
    );
    assert_eq!(program("SET \"_prog=%x%\""), None);
    assert_eq!(program("SET \"_prog=node"), None);
    let disk = |prog: &str| {
      let text = npm_shim("cli.js").replace("SET \"_prog=node\"", &format!("SET \"_prog={prog}\""));
      Disk::with(&[("/p/tool.cmd", &text)])
    };
    let req = request("/p/tool.cmd", &[], &[]);
    for node in ["node", "NODE", "node.exe", "Node.EXE", "/usr/bin/node"] {
      assert_eq!(
        req.resolve(&disk(node)).map(|c| c.cmd),
        Ok(strings(&["node", "/p/cli.js"])),
        "{node}"
      );
    }
    for other in ["bun", "nodejs", "node.cmd", "C:\\bin\\node.exe", "sh"] {
      assert_eq!(
        req
          .resolve(&disk(other))
          .map(|c| c.windows_verbatim_arguments),
        Ok(true),
        "{other}"
      );
    }
  }

  #[test]
  fn a12_3_the_shim_must_invoke_a_dp0_script() {
    let script = |text: &str| shim::script(text).map(String::from);
    assert_eq!(script(&npm_shim("a\\b.js")).as_deref(), Some("\\a\\b.js"));
    assert_eq!(
      script("\"%_PROG%\"\t\"%DP0%/x.js\"  %*").as_deref(),
      Some("/x.js")
    );
    assert_eq!(script("\"%_prog%\" \"%dp0%\" %*").as_deref(), Some(""));
    assert_eq!(script("\"%_prog%\" \"C:\\x.js\" %*"), None);
    assert_eq!(script("\"%_prog%\"\"%dp0%\\x.js\" %*"), None);
    assert_eq!(script("\"%_prog%\" \"%dp0%\\x.js\"%*"), None);
    assert_eq!(script("\"%_prog%\" \"\" %*"), None);
    assert_eq!(script("\"%_prog%\" \"%dp0%\\x\ny.js\" %*"), None);
    // A bare %dp0% is the shim's own directory.
    let text = npm_shim("").replace("\"%dp0%\\\"", "\"%dp0%\"");
    let disk = Disk::with(&[("/p/tool.cmd", &text)]);
    assert_eq!(
      request("/p/tool.cmd", &["a"], &[])
        .resolve(&disk)
        .map(|c| c.cmd),
      Ok(strings(&["node", "/p", "a"]))
    );
  }

  #[test]
  fn a12_3_npx_a_bare_batch_name_and_unreadable_shims_go_through_cmd() {
    let shim = npm_shim("cli.js");
    let disk = Disk::with(&[
      ("/p/npx.cmd", &shim),
      ("/p/NPX.Bat", &shim),
      ("/p/other.cmd", "@echo off"),
    ]);
    for command in ["/p/npx.cmd", "/p/NPX.Bat", "/p/other.cmd", "/p/gone.cmd"] {
      let resolved = request(command, &[], &[]).resolve(&disk);
      assert_eq!(
        resolved.map(|c| c.windows_verbatim_arguments),
        Ok(true),
        "{command}"
      );
    }
    // A bare `tool.cmd` found nowhere has no path segment: never read as a shim.
    let disk = Disk::with(&[("tool.cmd", &shim)]);
    let req = WindowsRequest {
      cwd: String::new(),
      process_cwd: String::new(),
      ..request("tool.cmd", &[], &[])
    };
    assert_eq!(
      req.resolve(&disk).map(|c| c.cmd),
      Ok(strings(&[
        "cmd.exe",
        "/d",
        "/e:ON",
        "/v:OFF",
        "/c",
        "\"\"tool.cmd\"\""
      ]))
    );
  }

  #[test]
  fn a12_4_a_resolved_executable_is_spawned_directly() {
    let disk = Disk::with(&[("/project/bin/server.EXE", "")]);
    let req = request("bin/server", &["--port", "1 2", ""], &[]);
    assert_eq!(
      req.resolve(&disk),
      Ok(direct(&["/project/bin/server.EXE", "--port", "1 2", ""]))
    );
    // An unresolved command with a non-batch extension is run as named.
    let req = request("server.exe", &["x"], &[]);
    assert_eq!(
      req.resolve(&Disk::default()),
      Ok(direct(&["server.exe", "x"]))
    );
  }

  #[test]
  fn a12_5_batch_files_and_unresolved_commands_go_through_cmd_exe() {
    let disk = Disk::with(&[("/project/run.CMD", "@echo off")]);
    let req = request("run", &["a", "b c"], &[]);
    assert_eq!(
      req.resolve(&disk),
      Ok(through_cmd("cmd.exe", "\"\"/project/run.CMD\" a \"b c\"\""))
    );
    // Unresolved and without an extension: cmd's own lookup may still find it.
    let req = request(
      "npx",
      &["-y", "@scope/server@1.0"],
      &[("ComSpec", Some("C:\\Windows\\cmd.exe"))],
    );
    assert_eq!(
      req.resolve(&Disk::default()),
      Ok(through_cmd(
        "C:\\Windows\\cmd.exe",
        "\"\"npx\" -y @scope/server@1.0\""
      ))
    );
    let req = request("npx", &[], &[("COMSPEC", Some(""))]);
    assert_eq!(
      req.resolve(&Disk::default()),
      Ok(through_cmd("cmd.exe", "\"\"npx\"\""))
    );
  }

  #[test]
  fn a12_5_arguments_of_safe_characters_stay_bare() {
    let safe = "azAZ09#$*+-./:?@\\_";
    assert_eq!(cmd_argument(safe), safe);
    assert_eq!(cmd_argument("C:\\dir\\file.txt"), "C:\\dir\\file.txt");
    assert_eq!(cmd_argument("--name=value"), "\"--name=value\"");
    for unsafe_arg in [
      "a b", "a&b", "a|b", "a<b", "a>b", "a^b", "(a)", "a,b", "a;b", "a!b", "é", "a\tb", "'a'",
      "`a`", "a~b", "[a]", "{a}",
    ] {
      assert_eq!(
        cmd_argument(unsafe_arg),
        format!("\"{unsafe_arg}\""),
        "{unsafe_arg}"
      );
    }
    // Empty and trailing-backslash arguments are quoted, the backslashes doubled.
    assert_eq!(cmd_argument(""), "\"\"");
    assert_eq!(cmd_argument("dir\\"), "\"dir\\\\\"");
    assert_eq!(cmd_argument("dir\\\\"), "\"dir\\\\\\\\\"");
  }

  #[test]
  fn a12_5_percent_quotes_and_backslashes_are_escaped() {
    assert_eq!(cmd_argument("%PATH%"), "\"%%cd:~,%PATH%%cd:~,%\"");
    assert_eq!(cmd_argument("100%"), "\"100%%cd:~,%\"");
    assert_eq!(cmd_argument("say \"hi\""), "\"say \"\"hi\"\"\"");
    assert_eq!(cmd_argument("\""), "\"\"\"\"");
    // Backslashes before a quote are doubled, others are kept.
    assert_eq!(cmd_argument("a\\\"b"), "\"a\\\\\"\"b\"");
    assert_eq!(cmd_argument("a\\\\\"b"), "\"a\\\\\\\\\"\"b\"");
    assert_eq!(cmd_argument("a\\b c"), "\"a\\b c\"");
    assert_eq!(cmd_argument("a\\%b"), "\"a\\%%cd:~,%b\"");
    assert_eq!(cmd_argument("a b\\"), "\"a b\\\\\"");
    assert_eq!(cmd_argument("\\\\"), "\"\\\\\\\\\"");
    // The command is quoted the same way.
    assert_eq!(
      cmd_line("C:\\My Tools\\100%\\run.cmd", &[]),
      Ok("\"\"C:\\My Tools\\100%%cd:~,%\\run.cmd\"\"".to_string())
    );
    assert_eq!(
      cmd_line("C:\\tools\\", &strings(&["x"])),
      Ok("\"\"C:\\tools\\\\\" x\"".to_string())
    );
  }

  #[test]
  fn a12_5_nul_cr_and_lf_are_rejected_command_first() {
    for bad in ["a\0b", "a\rb", "a\nb"] {
      assert_eq!(cmd_line(bad, &[]), Err(SpawnCommandError::BatchCommand));
      assert_eq!(
        cmd_line("ok", &strings(&["fine", bad])),
        Err(SpawnCommandError::BatchArgument)
      );
      assert_eq!(
        cmd_line(bad, &strings(&[bad])),
        Err(SpawnCommandError::BatchCommand)
      );
    }
    assert_eq!(
      SpawnCommandError::BatchCommand.to_string(),
      "Windows batch MCP command cannot contain NUL, CR, or LF characters"
    );
    assert_eq!(
      SpawnCommandError::BatchArgument.to_string(),
      "Windows batch MCP argument cannot contain NUL, CR, or LF characters"
    );
    // Only the cmd.exe rule has a line to protect.
    let disk = Disk::with(&[("/project/tool.EXE", "")]);
    assert_eq!(
      request("tool", &["a\nb"], &[]).resolve(&disk),
      Ok(direct(&["/project/tool.EXE", "a\nb"]))
    );
    assert_eq!(
      request("tool", &["a\nb"], &[]).resolve(&Disk::default()),
      Err(SpawnCommandError::BatchArgument)
    );
  }

  #[test]
  fn a12_paths_follow_the_hosts_node_path_posix() {
    use host_path::*;
    assert_eq!(join(&["/a/b", "../c", "./d.EXE"]), "/a/c/d.EXE");
    assert_eq!(join(&["", ""]), ".");
    assert_eq!(join(&["a", "..", ".."]), "..");
    assert_eq!(join(&["a/", "b/"]), "a/b/");
    assert_eq!(join(&["/", ".."]), "/");
    assert_eq!(join(&["./"]), "./");
    assert_eq!(resolve(&["/x", "y"], "/cwd"), "/x/y");
    assert_eq!(resolve(&["x", "y/"], "/cwd"), "/cwd/x/y");
    assert_eq!(resolve(&["/x", "/y/../z"], "/cwd"), "/z");
    assert_eq!(resolve(&["", ""], "/cwd"), "/cwd");
    assert_eq!(resolve(&["a"], ""), "a");
    assert_eq!(resolve(&["../.."], ""), "../..");
    assert_eq!(dirname("/a/b/c.cmd"), "/a/b");
    assert_eq!(dirname("/a/b/"), "/a");
    assert_eq!(dirname("/a"), "/");
    assert_eq!(dirname("a"), ".");
    assert_eq!(dirname("//a"), "//");
    assert_eq!(dirname(""), ".");
    assert_eq!(basename("/a/b.cmd"), "b.cmd");
    assert_eq!(basename("/a/b/"), "b");
    assert_eq!(basename("C:\\x\\npx.cmd"), "C:\\x\\npx.cmd");
    assert_eq!(basename("/"), "");
    assert_eq!(extname("a.cmd"), ".cmd");
    assert_eq!(extname("a.b.CMD"), ".CMD");
    assert_eq!(extname(".cmd"), "");
    assert_eq!(extname("..cmd"), ".cmd");
    assert_eq!(extname("a."), ".");
    assert_eq!(extname(".."), "");
    assert_eq!(extname("..."), ".");
    assert_eq!(extname("a.cmd/"), ".cmd");
    assert_eq!(extname("x.d/a"), "");
    assert_eq!(extname("C:\\x.y\\a"), ".y\\a");
    assert!(is_absolute("/a") && !is_absolute("C:\\a") && !is_absolute("a"));
  }
}
