//! A62: which servers are browser automation servers (the agent leaves them out when its
//! own browser tool is on): by name, by a hosted service's URL, or by the npm package a
//! stdio server runs. The names and patterns are the agent's 18.3.4 list.
use serde_json::Value as Json;

const NAMES: [&str; 6] = [
  "puppeteer",
  "playwright",
  "browserbase",
  "browser-tools",
  "browser-use",
  "browser",
];

const PACKAGES: [&str; 10] = [
  "@modelcontextprotocol/server-puppeteer",
  "@playwright/mcp",
  "@browserbasehq/mcp-server-browserbase",
  "@agentdeskai/browser-tools-mcp",
  "@agent-infra/mcp-server-browser",
  "puppeteer-mcp",
  "playwright-mcp",
  "pptr-mcp",
  "browser-use-mcp",
  "mcp-browser-use",
];

const HOSTS: [&str; 2] = ["browserbase.com", "browser-use.com"];

fn contains_any(text: &str, needles: &[&str]) -> bool {
  let text = text.to_lowercase();
  needles.iter().any(|needle| text.contains(needle))
}

/// Whether server `name` with `config` is a browser automation server.
pub fn is_browser_server(name: &str, config: &Json) -> bool {
  if NAMES.contains(&name.to_lowercase().as_str()) {
    return true;
  }
  let kind = config.get("type").and_then(Json::as_str);
  match kind {
    Some("http" | "sse") => config
      .get("url")
      .and_then(Json::as_str)
      .is_some_and(|url| contains_any(url, &HOSTS)),
    None | Some("stdio") => {
      let command = config.get("command").and_then(Json::as_str);
      let args = config.get("args").and_then(Json::as_array);
      command.is_some_and(|c| contains_any(c, &PACKAGES))
        || args.is_some_and(|args| {
          args
            .iter()
            .filter_map(Json::as_str)
            .any(|a| contains_any(a, &PACKAGES))
        })
    }
    Some(_) => false,
  }
}

#[cfg(test)]
mod tests {
  use super::is_browser_server;
  use serde_json::json;

  #[test]
  fn a62_browser_servers_by_name_url_or_package() {
    assert!(is_browser_server("Playwright", &json!({"command": "x"})));
    assert!(is_browser_server(
      "web",
      &json!({"type": "http", "url": "https://api.BrowserBase.com/mcp"})
    ));
    assert!(is_browser_server(
      "web",
      &json!({"command": "npx", "args": ["-y", "@playwright/mcp@latest"]})
    ));
    assert!(is_browser_server(
      "web",
      &json!({"type": "stdio", "command": "/bin/puppeteer-mcp-server"})
    ));
    assert!(!is_browser_server(
      "web",
      &json!({"type": "http", "url": "https://example.com/playwright-mcp"})
    ));
    assert!(!is_browser_server(
      "files",
      &json!({"command": "npx", "args": ["server-filesystem"]})
    ));
    assert!(!is_browser_server("browsers", &json!({"command": "x"})));
  }
}
