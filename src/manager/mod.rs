//! The MCP manager's pure logic, free of napi so it can be tested on its own: tool naming,
//! config validation, `.mcp.json` discovery, value resolution, the file tool cache and
//! the reconnect schedule. The binding wires these into `MCPManager`.

pub mod backoff;
pub mod config_file;
pub mod naming;
#[cfg(test)]
mod test_dir;
pub mod tool_cache;
pub mod validation;
pub mod value_resolution;
