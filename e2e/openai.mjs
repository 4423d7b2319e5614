// Drives the official OpenAI TypeScript SDK (openai on npm) through the
// OpenAI face of `llmfleet serve` (/openai/v1) against the OpenAI emulator
// of `llmfleet emulate --openai-addr`. Run by e2e/run.sh:
//
//	PROXY_URL=http://127.0.0.1:PORT OPENAI_EMU_URL=http://127.0.0.1:PORT node e2e/openai.mjs
//
// Prints one PASS or FAIL line per check and exits 1 if any failed.
import OpenAI from 'openai';

const proxy = process.env.PROXY_URL;
const emu = process.env.OPENAI_EMU_URL;
if (!proxy || !emu) {
  console.error('openai.mjs: set PROXY_URL and OPENAI_EMU_URL');
  process.exit(2);
}
let failed = 0;
const pass = (m) => console.log(`PASS ${m}`);
const fail = (m) => {
  failed++;
  console.log(`FAIL ${m}`);
};

function client(key = 'sk-e2e-alice', budgetMs) {
  const base = budgetMs ? `${proxy}/budget/${budgetMs}/openai/v1` : `${proxy}/openai/v1`;
  return new OpenAI({ baseURL: base, apiKey: key, maxRetries: 0, timeout: 60_000 });
}
const ask = (prompt, model = 'gpt-4.1') => ({ model, messages: [{ role: 'user', content: prompt }] });
const route = (opts) => ({ headers: { 'llmfleet-route': opts } });

async function check(name, fn) {
  try {
    await fn();
  } catch (e) {
    fail(`${name}: ${e && e.stack ? e.stack.split('\n').slice(0, 3).join(' ') : e}`);
  }
}

await check('sync chat', async () => {
  const { data, response } = await client().chat.completions.create(ask('sync hello')).withResponse();
  const text = data.choices[0].message.content;
  if (text !== 'Answer to: sync hello' || response.headers.get('llmfleet-route') !== 'sync') {
    throw new Error(`got ${text}, route ${response.headers.get('llmfleet-route')}`);
  }
  pass('sync chat (llmfleet-route: sync)');
});

await check('flex chat', async () => {
  const { data, response } = await client('sk-e2e-alice', 600000)
    .chat.completions.create(ask('flex hello', 'o4-mini'))
    .withResponse();
  if (response.headers.get('llmfleet-route') !== 'flex' || data.service_tier !== 'flex') {
    throw new Error(`route ${response.headers.get('llmfleet-route')}, service_tier ${data.service_tier}`);
  }
  pass('flex chat on a flex model with a 10-minute budget (service_tier flex)');
});

await check('batched chat, responses, embeddings', async () => {
  const c = client();
  const [chat, resp, emb] = await Promise.all([
    c.chat.completions.create(ask('batched chat'), route('batch')).withResponse(),
    c.responses.create({ model: 'o3', input: 'batched response' }, route('batch')).withResponse(),
    c.embeddings.create({ model: 'text-embedding-3-small', input: 'batched embedding' }, route('batch')).withResponse(),
  ]);
  if (chat.data.choices[0].message.content !== 'Answer to: batched chat') throw new Error('chat answer');
  if (!JSON.stringify(resp.data.output).includes('batched response')) throw new Error('response answer');
  if (!emb.data.data[0].embedding.length) throw new Error('embedding');
  for (const r of [chat, resp, emb]) {
    if (r.response.headers.get('llmfleet-route') !== 'batch' || !r.response.headers.get('llmfleet-batch-id')) {
      throw new Error(`route ${r.response.headers.get('llmfleet-route')}`);
    }
  }
  pass('batched chat, responses and embeddings (llmfleet-route: batch, a batch id each)');
});

await check('stream from a batch', async () => {
  const stream = await client().chat.completions.create(
    { ...ask('stream from a batch'), stream: true, stream_options: { include_usage: true } },
    route('batch'),
  );
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.choices[0]) text += chunk.choices[0].delta.content || '';
    if (chunk.usage) usage = chunk.usage;
  }
  if (text !== 'Answer to: stream from a batch' || !usage || !usage.completion_tokens) {
    throw new Error(`text ${JSON.stringify(text)}, usage ${JSON.stringify(usage)}`);
  }
  pass('stream: true synthesised from a batch result, usage chunk included');
});

await check('errors', async () => {
  for (const r of ['sync', 'batch']) {
    try {
      await client().chat.completions.create({ model: 'gpt-4.1' }, route(r));
      throw new Error(`${r}: no error`);
    } catch (e) {
      if (!(e instanceof OpenAI.APIError) || e.status !== 400 || !e.message) throw e;
    }
  }
  pass('a bad request answers 400 in the OpenAI envelope (APIError) on the sync and the batch route');
});

await check('two keys', async () => {
  const prompts = [];
  const calls = [];
  for (const key of ['sk-e2e-alice', 'sk-e2e-bob']) {
    for (let i = 0; i < 3; i++) {
      const p = `${key} ${i}`;
      prompts.push(p);
      calls.push(client(key).chat.completions.create(ask(p), route('batch')).withResponse().then((r) => [key, p, r]));
    }
  }
  const batches = { 'sk-e2e-alice': new Set(), 'sk-e2e-bob': new Set() };
  for (const [key, p, r] of await Promise.all(calls)) {
    if (r.data.choices[0].message.content !== `Answer to: ${p}`) throw new Error(`${p} got ${r.data.choices[0].message.content}`);
    batches[key].add(r.response.headers.get('llmfleet-batch-id'));
  }
  for (const id of batches['sk-e2e-alice']) {
    if (batches['sk-e2e-bob'].has(id)) throw new Error(`batch ${id} holds both keys`);
  }
  pass('two keys batched in one window: each its own answers, no batch shared');
});

process.exit(failed ? 1 : 0);
