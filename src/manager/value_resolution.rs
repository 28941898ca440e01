//! M3's built-in resolution of env and header values: `!command`, environment variable,
//! or the literal.

use futures::future::{BoxFuture, FutureExt, Shared};
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::Child;

/// How long a `!command` may run before it is killed and its value dropped.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

type CommandResult = Shared<BoxFuture<'static, Option<String>>>;

/// The environment values resolve against: the calling runtime's `process.env`, which under
/// Bun holds what `.env` files and run-time assignments added and the C environment lacks.
pub type Environment = HashMap<String, String>;

/// Resolves one value; `None` means the entry is dropped. Must run inside a tokio runtime.
///
/// `!cmd` runs `cmd` through the shell, with `environment`, and yields its trimmed stdout (a
/// failure, timeout or empty output is `None`; the result is cached for the process);
/// otherwise the variable of `environment` named `value` if it is set and non-empty;
/// otherwise `value` itself unless it is empty.
pub async fn resolve_config_value(value: &str, environment: &Environment) -> Option<String> {
  if let Some(command) = value.strip_prefix('!') {
    return run_command_cached_with(command, environment, COMMAND_TIMEOUT).await;
  }
  let variable = environment.get(value).or_else(|| {
    let mut named = environment.iter();
    named
      .find(|(name, _)| crate::sys::same_env_name(name, value))
      .map(|(_, from_env)| from_env)
  });
  match variable {
    Some(from_env) if !from_env.is_empty() => Some(from_env.clone()),
    _ => (!value.is_empty()).then(|| value.to_owned()),
  }
}

/// Resolves all values concurrently, in the same order.
pub async fn resolve_config_values(
  values: Vec<String>,
  environment: Environment,
) -> Vec<Option<String>> {
  let resolving = values
    .iter()
    .map(|value| resolve_config_value(value, &environment));
  futures::future::join_all(resolving).await
}

async fn run_command_cached_with(
  command: &str,
  environment: &Environment,
  timeout: Duration,
) -> Option<String> {
  static CACHE: OnceLock<Mutex<HashMap<String, CommandResult>>> = OnceLock::new();
  let result = {
    let mut cache = CACHE
      .get_or_init(Default::default)
      .lock()
      .unwrap_or_else(PoisonError::into_inner);
    cache
      .entry(command.to_owned())
      .or_insert_with(|| {
        // A task of its own, so the command finishes (or is killed) even if every caller
        // waiting on it is cancelled; a cached but unpolled future would leave it hanging.
        let task = tokio::spawn(run_command(
          command.to_owned(),
          environment.clone(),
          timeout,
        ));
        async move { task.await.ok().flatten() }.boxed().shared()
      })
      .clone()
  };
  result.await
}

async fn run_command(
  command: String,
  environment: Environment,
  timeout: Duration,
) -> Option<String> {
  if command.trim().is_empty() {
    return None;
  }
  let mut child = crate::sys::shell::command(&command)
    .env_clear()
    .envs(environment)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .kill_on_drop(true)
    .spawn()
    .ok()?;
  // Taken now: once the shell is reaped `id()` is gone, but its group may live on.
  let pid = child.id();
  // Windows: the group is a job, which the timeout ends (Unix: the shell leads one).
  let _ = crate::sys::process::enter_group(&child);
  let mut stdout = child.stdout.take()?;
  let mut output = Vec::new();
  let finished = tokio::time::timeout(timeout, async {
    let (read, status) = tokio::join!(stdout.read_to_end(&mut output), child.wait());
    read.ok()?;
    status.ok()
  })
  .await;
  if finished.is_ok() {
    crate::sys::shell::release_group(pid);
  }
  match finished {
    Ok(Some(status)) if status.success() => {
      let text = String::from_utf8_lossy(&output);
      let text = text.trim();
      (!text.is_empty()).then(|| text.to_owned())
    }
    Ok(_) => None,
    Err(_elapsed) => {
      kill_all(&mut child, pid).await;
      None
    }
  }
}

async fn kill_all(child: &mut Child, pid: Option<u32>) {
  crate::sys::shell::kill_group(pid);
  let _ = child.start_kill();
  // Reap it, so no zombie outlives the timeout; bounded in case the kill does not land.
  let _ = tokio::time::timeout(Duration::from_secs(1), child.wait()).await;
}

#[cfg(all(test, unix))]
mod tests {
  use super::*;
  use std::path::PathBuf;
  use std::sync::atomic::{AtomicU32, Ordering};
  use std::time::Instant;

  fn env() -> Environment {
    std::env::vars().collect()
  }

  async fn resolve(value: &str) -> Option<String> {
    resolve_config_value(value, &env()).await
  }

  fn temp_path(tag: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
      "mcp-native-resolve-{tag}-{}-{n}",
      std::process::id()
    ))
  }

  #[tokio::test]
  async fn literals() {
    assert_eq!(resolve("plain value").await.as_deref(), Some("plain value"));
    assert_eq!(
      resolve("MCP_NATIVE_SURELY_UNSET_VAR").await.as_deref(),
      Some("MCP_NATIVE_SURELY_UNSET_VAR")
    );
    assert_eq!(resolve("").await, None);
    assert_eq!(resolve("a=b").await.as_deref(), Some("a=b"));
  }

  #[tokio::test]
  async fn environment_variables() {
    let environment: Environment = [
      ("MCP_NATIVE_TEST_SET", "secret"),
      ("MCP_NATIVE_TEST_EMPTY", ""),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .into();
    let resolve = |value: &'static str| resolve_config_value(value, &environment);
    assert_eq!(
      resolve("MCP_NATIVE_TEST_SET").await.as_deref(),
      Some("secret")
    );
    assert_eq!(
      resolve("MCP_NATIVE_TEST_EMPTY").await.as_deref(),
      Some("MCP_NATIVE_TEST_EMPTY")
    );
    // Only the given environment counts, never the process's own.
    assert_eq!(resolve("PATH").await.as_deref(), Some("PATH"));
  }

  #[tokio::test]
  async fn commands_see_the_given_environment() {
    let mut environment = Environment::new();
    environment.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
    environment.insert("MCP_NATIVE_TEST_CMD".into(), "from-js".into());
    assert_eq!(
      resolve_config_value("!echo $MCP_NATIVE_TEST_CMD", &environment)
        .await
        .as_deref(),
      Some("from-js")
    );
  }

  #[tokio::test]
  async fn commands() {
    assert_eq!(resolve("!echo hi").await.as_deref(), Some("hi"));
    assert_eq!(
      resolve("!printf '  spaced \\n\\n'").await.as_deref(),
      Some("spaced")
    );
    assert_eq!(resolve("!printf 'a\\nb\\n'").await.as_deref(), Some("a\nb"));
    assert_eq!(
      resolve("!echo out; echo err >&2").await.as_deref(),
      Some("out")
    );
    assert_eq!(resolve("!exit 3").await, None);
    assert_eq!(resolve("!echo partial; exit 1").await, None);
    assert_eq!(resolve("!printf ''").await, None);
    assert_eq!(resolve("!   ").await, None);
    assert_eq!(resolve("!").await, None);
    assert_eq!(resolve("!mcp-native-no-such-command-xyz").await, None);
    // stdin is null, so a command reading it sees EOF rather than hanging.
    assert_eq!(resolve("!cat; echo done").await.as_deref(), Some("done"));
  }

  #[tokio::test]
  async fn resolves_many_in_order() {
    let mut environment = env();
    environment.insert("MCP_NATIVE_TEST_MANY".into(), "from-env".into());
    let values = [
      "!echo one",
      "",
      "MCP_NATIVE_TEST_MANY",
      "literal",
      "!exit 1",
    ]
    .map(String::from)
    .to_vec();
    let resolved = resolve_config_values(values, environment).await;
    let want = [Some("one"), None, Some("from-env"), Some("literal"), None];
    assert_eq!(
      resolved.iter().map(Option::as_deref).collect::<Vec<_>>(),
      want
    );
  }

  #[tokio::test]
  async fn timeout_kills_the_whole_group() {
    let pid_file = temp_path("pid");
    let command = format!("sleep 5 & echo $! > '{}'; wait", pid_file.display());
    let start = Instant::now();
    assert_eq!(
      run_command_cached_with(&command, &env(), Duration::from_millis(300)).await,
      None
    );
    assert!(
      start.elapsed() < Duration::from_secs(3),
      "took {:?}",
      start.elapsed()
    );

    let sleep_pid: i32 = std::fs::read_to_string(&pid_file)
      .unwrap()
      .trim()
      .parse()
      .unwrap();
    let _ = std::fs::remove_file(&pid_file);
    let deadline = Instant::now() + Duration::from_secs(2);
    while is_running(sleep_pid) {
      assert!(
        Instant::now() < deadline,
        "sleep {sleep_pid} survived the timeout"
      );
      tokio::time::sleep(Duration::from_millis(20)).await;
    }
  }

  /// Alive and not a zombie (an orphaned zombie waits for whoever reaps orphans here).
  fn is_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
      Ok(stat) => stat
        .rsplit_once(") ")
        .is_some_and(|(_, rest)| !rest.starts_with('Z')),
      // Signal 0 only asks whether the process exists.
      Err(_) => {
        !cfg!(target_os = "linux")
          && crate::sys::process::signal_process(pid, crate::sys::process::Signal::Probe)
      }
    }
  }

  #[tokio::test]
  async fn identical_commands_run_once() {
    let log = temp_path("runs");
    let command = format!("!echo run >> '{}'; sleep 0.2; echo value", log.display());
    let values = vec![command.clone(); 5];
    let resolved = resolve_config_values(values, env()).await;
    assert!(
      resolved.iter().all(|r| r.as_deref() == Some("value")),
      "{resolved:?}"
    );
    assert_eq!(resolve(&command).await.as_deref(), Some("value"));
    let runs = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert_eq!(runs.lines().count(), 1, "{runs:?}");
  }

  #[tokio::test]
  async fn cancelled_callers_do_not_stall_the_command() {
    let command = "!sleep 0.1; echo late".to_owned();
    let first = resolve(&command);
    // Dropping the only waiter must not leave the cached command unfinished.
    assert!(tokio::time::timeout(Duration::from_millis(10), first)
      .await
      .is_err());
    assert_eq!(resolve(&command).await.as_deref(), Some("late"));
  }
}
