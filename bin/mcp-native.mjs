#!/usr/bin/env node
// The mcp-native command line; `mcp-native --help` lists the commands. The code is under
// cli/ and uses only the package's public API, so it doubles as a usage example.
import { main } from "../cli/main.mjs";

process.exitCode = await main(process.argv.slice(2));
