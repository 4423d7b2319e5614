// Drives the official TypeScript SDK (@anthropic-ai/sdk) through
// `llmfleet serve` against `llmfleet emulate`. Run by e2e/run.sh:
//
//	PROXY_URL=http://127.0.0.1:PORT node e2e/sdk.mjs
//
// Prints one PASS or FAIL line per check and exits 1 if any failed.
import Anthropic from '@anthropic-ai/sdk';

const proxy = process.env.PROXY_URL;
if (!proxy) {
  console.error('sdk.mjs: set PROXY_URL');
  process.exit(2);
}
const model = 'claude-haiku-4-5';

// client makes an SDK client whose base URL carries a latency budget.
function client(budgetMs) {
  return new Anthropic({
    baseURL: `${proxy}/budget/${budgetMs}`,
    apiKey: 'test-ts-sdk',
    maxRetries: 0,
    timeout: 60_000,
  });
}

function params(prompt) {
  return { model, max_tokens: 256, messages: [{ role: 'user', content: prompt }] };
}

function textOf(msg) {
  return msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

// expect throws unless the response came by route with the emulator's
// answer to prompt. A batched non-streaming answer names its batch in a
// header; a stream that began (with pings) before its batch ended names it
// in a trailer, which fetch does not expose.
function expect(what, { msg, response, streamed }, route, prompt) {
  const got = response.headers.get('llmfleet-route');
  if (got !== route) throw new Error(`${what}: llmfleet-route ${got}, want ${route}`);
  if (route === 'batch' && !streamed && !(response.headers.get('llmfleet-batch-id') || '').startsWith('msgbatch_')) {
    throw new Error(`${what}: no llmfleet-batch-id header on a batched answer`);
  }
  const want = `Answer to: ${prompt}`;
  if (textOf(msg) !== want) throw new Error(`${what}: text ${JSON.stringify(textOf(msg))}, want ${JSON.stringify(want)}`);
  if (msg.stop_reason !== 'end_turn') throw new Error(`${what}: stop_reason ${msg.stop_reason}`);
}

async function create(budgetMs, prompt) {
  const { data, response } = await client(budgetMs).messages.create(params(prompt)).withResponse();
  return { msg: data, response };
}

async function stream(budgetMs, prompt) {
  const s = client(budgetMs).messages.stream(params(prompt));
  let deltas = '';
  s.on('text', (t) => { deltas += t; });
  const { response } = await s.withResponse();
  const msg = await s.finalMessage();
  if (deltas !== textOf(msg)) throw new Error(`streamed deltas ${JSON.stringify(deltas)} differ from the final message`);
  const type = response.headers.get('content-type') || '';
  if (!type.startsWith('text/event-stream')) throw new Error(`stream answered with content-type ${type}`);
  return { msg, response, streamed: true };
}

const checks = [
  ['ts-sdk batch non-streaming', async () => {
    const p = 'TS SDK, patient, plain';
    expect('create', await create(600000, p), 'batch', p);
  }],
  ['ts-sdk batch streaming', async () => {
    const p = 'TS SDK, patient, streamed';
    expect('stream', await stream(600000, p), 'batch', p);
  }],
  ['ts-sdk batch pooled (3 concurrent calls share one batch)', async () => {
    const prompts = ['pooled one', 'pooled two', 'pooled three'];
    const got = await Promise.all(prompts.map((p) => create(600000, p)));
    got.forEach((g, i) => expect(`call ${i}`, g, 'batch', prompts[i]));
    const ids = new Set(got.map((g) => g.response.headers.get('llmfleet-batch-id')));
    if (ids.size !== 1) throw new Error(`answered from ${ids.size} batches: ${[...ids]}`);
  }],
  ['ts-sdk tight budget goes sync (non-streaming)', async () => {
    const p = 'TS SDK, in a hurry, plain';
    expect('create', await create(1000, p), 'sync', p);
  }],
  ['ts-sdk tight budget goes sync (streaming)', async () => {
    const p = 'TS SDK, in a hurry, streamed';
    expect('stream', await stream(1000, p), 'sync', p);
  }],
  ['ts-sdk batched error keeps the API envelope', async () => {
    try {
      await client(600000).messages.create(params('fail please [error:invalid_request_error]'));
    } catch (e) {
      if (!(e instanceof Anthropic.BadRequestError)) throw new Error(`got ${e?.constructor?.name}: ${e}`);
      if (e.headers?.get?.('llmfleet-route') !== 'batch') throw new Error(`error came by route ${e.headers?.get?.('llmfleet-route')}`);
      const err = e.error?.error;
      if (err?.type !== 'invalid_request_error' || !String(err?.message).includes('[error:invalid_request_error]')) {
        throw new Error(`error body ${JSON.stringify(e.error)}`);
      }
      return;
    }
    throw new Error('no error');
  }],
];

let failed = 0;
for (const [name, run] of checks) {
  const t0 = Date.now();
  try {
    await run();
    console.log(`PASS ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e?.stack || e}`);
  }
}
process.exit(failed ? 1 : 0);
