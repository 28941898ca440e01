//! A11/A12: `resolveStdioSpawnCommand`'s arguments, read from the host's values in the
//! order the agent reads them, rejected with a TypeError naming the bad one (E2).
use super::spawn_command::{self, Environment, SpawnCommand, Target, WindowsRequest};
use crate::host::Values;

/// What to resolve: the Windows rules need the file system, the plain argv does not.
pub enum SpawnRequest {
  Windows(WindowsRequest),
  Other(SpawnCommand),
}

/// `object[name]`, `None` when nullish; what a getter throws is the rejection.
pub fn present<H: Values>(
  h: &H,
  object: &H::Value,
  name: &str,
) -> Result<Option<H::Value>, H::Value> {
  let value = h.field(object, name)?;
  Ok((!h.is_nullish(&value)).then_some(value))
}

/// A plain object: an object that is not an array.
pub fn is_record<H: Values>(h: &H, value: &H::Value) -> bool {
  h.is_object(value) && h.items(value).is_none()
}

pub use crate::sys::build_platform;

/// A platform (`what` names the field or argument): a string, or nullish for the host's.
pub fn platform<H: Values>(
  h: &H,
  value: Option<&H::Value>,
  what: &str,
) -> Result<Option<String>, H::Value> {
  match value {
    None => Ok(None),
    Some(value) => h
      .as_string(value)
      .map(Some)
      .ok_or_else(|| h.type_error(&format!("The {what} must be a string"))),
  }
}

fn command_and_args<H: Values>(
  h: &H,
  config: &H::Value,
) -> Result<(String, Vec<String>), H::Value> {
  let fail = |message: &str| h.type_error(message);
  if !is_record(h, config) {
    return Err(fail("The \"config\" argument must be an object"));
  }
  let command = present(h, config, "command")?
    .and_then(|command| h.as_string(&command))
    .filter(|command| !command.is_empty())
    .ok_or_else(|| fail("The \"command\" field must be a non-empty string"))?;
  let args = match present(h, config, "args")? {
    None => Vec::new(),
    Some(args) => h
      .items(&args)
      .and_then(|items| items.iter().map(|arg| h.as_string(arg)).collect())
      .ok_or_else(|| fail("The \"args\" field must be an array of strings"))?,
  };
  Ok((command, args))
}

/// `options.env`: every own key, with `undefined` (or any non-string) as unset.
fn environment<H: Values>(h: &H, env: &H::Value) -> Result<Environment, H::Value> {
  let vars = h
    .keys(env)?
    .into_iter()
    .map(|key| {
      let value = h.field(env, &key)?;
      Ok((key, h.as_string(&value)))
    })
    .collect::<Result<Vec<_>, H::Value>>()?;
  Ok(Environment::new(vars))
}

/// Reads `config` and `options`; `host_platform` is asked only when `options.platform` is
/// absent.
pub fn read<H: Values>(
  h: &H,
  config: &H::Value,
  options: &H::Value,
  host_platform: impl FnOnce() -> String,
) -> Result<SpawnRequest, H::Value> {
  let (command, args) = command_and_args(h, config)?;
  if !is_record(h, options) {
    return Err(h.type_error("The \"options\" argument must be an object"));
  }
  let platform = platform(
    h,
    present(h, options, "platform")?.as_ref(),
    "\"options.platform\" field",
  )?;
  let target = match platform.as_deref() {
    Some(platform) => spawn_command::target(Some(platform), ""),
    None => spawn_command::target(None, &host_platform()),
  };
  if let Target::Other { detached } = target {
    return Ok(SpawnRequest::Other(spawn_command::plain_command(
      &command, &args, detached,
    )));
  }
  let cwd = present(h, options, "cwd")?
    .and_then(|cwd| h.as_string(&cwd))
    .ok_or_else(|| h.type_error("The \"options.cwd\" field must be a string"))?;
  let env = present(h, options, "env")?
    .filter(|env| is_record(h, env))
    .ok_or_else(|| h.type_error("The \"options.env\" field must be an object"))?;
  let host_has_inheritable_console =
    present(h, options, "hostHasInheritableConsole")?.is_some_and(|value| h.truthy(&value));
  // With its working directory deleted, Node's process.cwd() throws; `/` stands in so that
  // a relative cwd still names somewhere.
  let process_cwd = std::env::current_dir()
    .map(|dir| dir.to_string_lossy().into_owned())
    .unwrap_or_else(|_| "/".to_string());
  Ok(SpawnRequest::Windows(WindowsRequest {
    command,
    args,
    cwd,
    env: environment(h, &env)?,
    host_has_inheritable_console,
    process_cwd,
  }))
}

#[cfg(test)]
mod tests {
  use super::*;
  use crate::fake_host::{v, FakeHost, V};
  use serde_json::json;

  fn read_json(config: serde_json::Value, options: serde_json::Value) -> Result<SpawnRequest, V> {
    read(&FakeHost::new(), &v(config), &v(options), || "linux".into())
  }

  fn rejection(config: serde_json::Value, options: serde_json::Value) -> String {
    match read_json(config, options) {
      Err(error) => {
        assert!(error.is_type_error(), "a TypeError: {}", error.message());
        error.message()
      }
      Ok(_) => panic!("accepted"),
    }
  }

  #[test]
  fn a11_plain_argv_off_windows_detached_except_on_darwin() {
    let Ok(SpawnRequest::Other(command)) =
      read_json(json!({"command": "node", "args": ["s.js"]}), json!({}))
    else {
      panic!("plain");
    };
    assert_eq!(command.cmd, ["node", "s.js"]);
    assert!(command.detached);
    let Ok(SpawnRequest::Other(command)) =
      read_json(json!({"command": "node"}), json!({"platform": "darwin"}))
    else {
      panic!("plain");
    };
    assert!(!command.detached);
  }

  #[test]
  fn a12_windows_reads_cwd_env_and_console() {
    let options = json!({
      "platform": "win32", "cwd": "C:\\work", "env": {"PATH": "C:\\bin"},
      "hostHasInheritableConsole": true,
    });
    let Ok(SpawnRequest::Windows(request)) = read_json(json!({"command": "npx"}), options) else {
      panic!("windows");
    };
    assert_eq!(request.cwd, "C:\\work");
    assert_eq!(request.env.get("path"), Some("C:\\bin"));
    assert!(request.host_has_inheritable_console);
  }

  #[test]
  fn e2_bad_arguments_name_themselves() {
    assert_eq!(
      rejection(json!([]), json!({})),
      "The \"config\" argument must be an object"
    );
    assert_eq!(
      rejection(json!({"command": ""}), json!({})),
      "The \"command\" field must be a non-empty string"
    );
    assert_eq!(
      rejection(json!({"command": "x", "args": ["a", 1]}), json!({})),
      "The \"args\" field must be an array of strings"
    );
    assert_eq!(
      rejection(json!({"command": "x", "args": "a"}), json!({})),
      "The \"args\" field must be an array of strings"
    );
    assert_eq!(
      rejection(json!({"command": "x"}), json!(null)),
      "The \"options\" argument must be an object"
    );
    assert_eq!(
      rejection(json!({"command": "x"}), json!({"platform": 7})),
      "The \"options.platform\" field must be a string"
    );
    assert_eq!(
      rejection(json!({"command": "x"}), json!({"platform": "win32"})),
      "The \"options.cwd\" field must be a string"
    );
    assert_eq!(
      rejection(
        json!({"command": "x"}),
        json!({"platform": "win32", "cwd": "C:\\", "env": []})
      ),
      "The \"options.env\" field must be an object"
    );
  }
}
