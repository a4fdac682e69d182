// What the server tests share: starting `sprout serve` on a free port,
// waiting for it to be ready, stopping it with a signal, loading the real
// client libraries from the folder npm installed them in, and a tally of
// checks printed the way the C tests print theirs.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

export const SPROUT = process.env.SPROUT_BIN;
export const SHARED = process.env.SPROUT_SHARED_DIR;
export const MODEL = join(SHARED ?? '../shared', 'models/stories260K.gguf');

let passed = 0, failed = 0;

export function check(cond, what, ...detail) {
  if (cond) passed++;
  else {
    failed++;
    console.error(`check failed: ${what}`, ...detail);
  }
}

export async function checkRejects(promise, what, test) {
  try {
    await promise;
    check(false, `${what}: expected an error`);
  } catch (e) {
    check(test(e), `${what}: wrong error`, e?.status, e?.message);
  }
}

export function finish() {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

// The npm folder the setup test filled (openai, ollama).
export function clients() {
  const dir = process.env.SPROUT_NODE_CLIENTS;
  const require = createRequire(join(dir, 'package.json'));
  const openai = require('openai');
  const ollama = require('ollama');
  return { OpenAI: openai.OpenAI ?? openai.default ?? openai, Ollama: ollama.Ollama };
}

// require() from the same npm folder, for the other packages it holds
// (ajv, ajv-formats, ai, @ai-sdk/openai-compatible, zod).
export function clientRequire() {
  return createRequire(join(process.env.SPROUT_NODE_CLIENTS, 'package.json'));
}

// Starts the server on a free port; resolves once /health says 200. With
// { model: null } it serves a store (its folder in { env }) instead of one file.
export async function startServer(extraArgs = [], { model = MODEL, env = process.env } = {}) {
  const args = ['serve', ...(model ? ['-m', model] : []), '--port', '0', ...extraArgs];
  const proc = spawn(SPROUT, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  // a test that throws must not leave its server behind
  process.on('exit', () => proc.exitCode === null && proc.signalCode === null && proc.kill('SIGKILL'));
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no port announced:\n${log}`)), 20000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on http:\/\/[^ ]*:(\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${log}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    url,
    proc,
    log: () => log,
    // SIGTERM, then the exit status
    stop: async () => {
      proc.kill('SIGTERM');
      return exited;
    },
    rss: () => {
      try {
        const status = require('node:fs').readFileSync(`/proc/${proc.pid}/status`, 'utf8');
        return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) * 1024;
      } catch {
        return 0;
      }
    },
  };
}

const require = createRequire(import.meta.url);

export async function postJson(url, body, headers = {}) {
  const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, json, text, headers: r.headers };
}

export function reference() {
  return JSON.parse(require('node:fs').readFileSync(join(SHARED, 'reference/stories260K-greedy.json'), 'utf8'));
}
