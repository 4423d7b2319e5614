// Drives the official Gemini TypeScript SDK (@google/genai on npm) through
// the Gemini face of `llmfleet serve` (/gemini) against the Gemini
// emulator of `llmfleet emulate --gemini-addr`. Run by e2e/run.sh:
//
//	PROXY_URL=http://127.0.0.1:PORT node e2e/gemini.mjs
//
// Prints one PASS or FAIL line per check and exits 1 if any failed.
import { GoogleGenAI } from '@google/genai';

const proxy = process.env.PROXY_URL;
if (!proxy) {
  console.error('gemini.mjs: set PROXY_URL');
  process.exit(2);
}
let failed = 0;
const pass = (m) => console.log(`PASS ${m}`);
const fail = (m) => {
  failed++;
  console.log(`FAIL ${m}`);
};

function client(budgetMs) {
  const baseUrl = budgetMs ? `${proxy}/budget/${budgetMs}/gemini` : `${proxy}/gemini`;
  // @google/genai 3.x calls /v1 by default, which the face routes as it
  // does /v1beta (a batched call goes through Batch Mode, v1beta).
  return new GoogleGenAI({ apiKey: 'g-e2e-alice', httpOptions: { baseUrl } });
}
const model = 'gemini-2.5-flash';
const text = (prompt) => [{ role: 'user', parts: [{ text: prompt }] }];
const forced = (route) => ({ httpOptions: { headers: { 'llmfleet-route': route } } });
const routeOf = (resp) => {
  const h = resp.sdkHttpResponse && resp.sdkHttpResponse.headers;
  return h ? h['llmfleet-route'] || h['Llmfleet-Route'] : undefined;
};

async function check(name, fn) {
  try {
    await fn();
  } catch (e) {
    fail(`${name}: ${e && e.stack ? e.stack.split('\n').slice(0, 3).join(' ') : e}`);
  }
}

async function answered(name, resp, prompt, want) {
  const got = resp.text;
  const route = routeOf(resp);
  if (got === `Answer to: ${prompt}` && (!want || route === want)) {
    pass(`gemini ${name}: answered, route ${route}`);
  } else {
    fail(`gemini ${name}: ${JSON.stringify(got)} route ${route}, want ${want}`);
  }
}

await check('sync', async () => {
  const p = 'gemini sync hello';
  await answered('sync', await client().models.generateContent({ model, contents: text(p) }), p, 'sync');
});

await check('stream', async () => {
  const p = 'gemini stream hello';
  let got = '';
  for await (const chunk of await client().models.generateContentStream({ model, contents: text(p) })) {
    got += chunk.text || '';
  }
  if (got === `Answer to: ${p}`) pass('gemini stream: text assembled');
  else fail(`gemini stream: ${JSON.stringify(got)}`);
});

await check('flex', async () => {
  const p = 'gemini flex hello';
  await answered('flex (a patient budget)', await client(600000).models.generateContent({ model, contents: text(p) }), p, 'flex');
});

await check('rescue', async () => {
  // The emulator's batches (45 s) take longer than this budget, which the
  // engine cannot know yet (no Gemini batch has ended; its prior is 2 s):
  // it batches the call, then rescues it with a sync one before the
  // budget ends (at the budget less the sync latency it expects).
  const p = 'gemini rescued hello';
  const start = Date.now();
  const resp = await client(40000).models.generateContent({ model, contents: text(p), config: forced('batch') });
  const took = Date.now() - start;
  if (resp.text === `Answer to: ${p}` && took > 1000 && took < 40000) pass(`gemini rescue: answered in ${took} ms, within its 40 s budget`);
  else fail(`gemini rescue: ${JSON.stringify(resp.text)} in ${took} ms`);
});

await check('batch', async () => {
  const p = 'gemini batched hello';
  const resp = await client(600000).models.generateContent({ model, contents: text(p), config: forced('batch') });
  await answered('batched', resp, p, 'batch');
});

await check('error envelope', async () => {
  try {
    await client().models.generateContent({ model, contents: text('x'), config: { httpOptions: { headers: { 'llmfleet-latency-budget-ms': 'soon' } } } });
    fail('gemini bad budget: answered');
  } catch (e) {
    const msg = String(e && e.message);
    if (msg.includes('INVALID_ARGUMENT') || (e && e.status === 400)) pass('gemini bad budget: 400 INVALID_ARGUMENT in Google\'s envelope');
    else fail(`gemini bad budget: ${msg}`);
  }
});

process.exit(failed ? 1 : 0);
