// The server's own APIs: the model list, each model's context size, and
// chat completions streamed as server-sent events, read with fetch and a
// ReadableStream so that a Stop (AbortController) closes the connection
// and the server cancels the generation.

/** An error to show: status 0 when the server could not be reached. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(apiKey, json) {
  const h = {};
  if (json) h['Content-Type'] = 'application/json';
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  return h;
}

// The server's message from an error response (OpenAI's {"error": {"message"}}, Ollama's {"error": "..."}), else its text.
async function errorOf(response) {
  const text = await response.text().catch(() => '');
  let message = text.trim();
  try {
    const v = JSON.parse(text);
    message = v?.error?.message ?? (typeof v?.error === 'string' ? v.error : message);
  } catch { /* not JSON: the text itself */ }
  return new ApiError(response.status, `${response.status} ${response.statusText || ''}`.trim() + (message ? `: ${message}` : ''));
}

async function send(url, init) {
  let response;
  try {
    response = await fetch(url, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'Cannot reach the server: is `sprout serve` still running?');
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

/** The ids of the models GET /v1/models lists. */
export async function listModels(apiKey) {
  const r = await send('/v1/models', { headers: headers(apiKey, false) });
  const v = await r.json();
  return (v.data ?? []).map((m) => m.id).filter((id) => typeof id === 'string');
}

/** A model's context per request (the num_ctx POST /api/show reports), or null if the server does not say. */
export async function contextSize(model, apiKey) {
  try {
    const r = await send('/api/show', { method: 'POST', headers: headers(apiKey, true), body: JSON.stringify({ model }) });
    const v = await r.json();
    const m = /(?:^|\n)num_ctx\s+(\d+)/.exec(v.parameters ?? '');
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

// The events of a server-sent event stream, each the joined text of its data lines.
async function* events(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value ?? new Uint8Array(), { stream: !done }).replace(/\r\n?/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(l[5] === ' ' ? 6 : 5));
        if (data.length) yield data.join('\n');
      }
      if (done) break;
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Streams one chat completion. `on` receives, as they come: content(text),
 * reasoning(text), tools(calls so far), and at the end finish(reason),
 * timings(obj), usage(obj). Resolves when the stream ends; rejects with
 * ApiError (and the browser's AbortError when `signal` aborts).
 */
export async function streamChat(body, { apiKey, session, signal, on }) {
  // X-Session-Id: a balancer in front of several servers sends a conversation's turns to the one that caches it
  const h = { ...headers(apiKey, true), ...(session ? { 'X-Session-Id': session } : {}) };
  const r = await send('/v1/chat/completions', { method: 'POST', headers: h, body: JSON.stringify(body), signal });
  const calls = [];
  for await (const data of events(r.body)) {
    if (data === '[DONE]') return;
    let v;
    try {
      v = JSON.parse(data);
    } catch {
      throw new ApiError(502, `the server sent an event that is not JSON: ${data.slice(0, 200)}`);
    }
    if (v.error) throw new ApiError(v.error.code ?? 500, v.error.message ?? String(v.error));
    if (v.timings) on.timings?.(v.timings);
    if (v.usage) on.usage?.(v.usage);
    const choice = v.choices?.[0];
    if (!choice) continue;
    const delta = choice.delta ?? {};
    if (delta.reasoning_content) on.reasoning?.(delta.reasoning_content);
    if (delta.content) on.content?.(delta.content);
    for (const tc of delta.tool_calls ?? []) {
      const at = tc.index ?? calls.length;
      const call = (calls[at] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (tc.id) call.id = tc.id;
      if (tc.function?.name) call.function.name += tc.function.name;
      if (tc.function?.arguments) call.function.arguments += tc.function.arguments;
      on.tools?.(calls.filter(Boolean));
    }
    if (choice.finish_reason) on.finish?.(choice.finish_reason);
  }
}
