// End-to-end: the official `openai` npm client (a real client no one here wrote)
// against the gpuaas gateway. The upstream is build/fake-openai, a small
// OpenAI-compatible server of the project's own that streams tokens at a set pace
// and reports usage: it stands in for vLLM because there is no GPU or model here.
// Prints "ok NAME" / "FAIL NAME: why" lines (tests/integration/maas_e2e.sh counts them).
import OpenAI from "openai";

const { GW, KEY, LIMITED_KEY, TOKENS_KEY, ADMIN_TOKEN, UPSTREAM } = process.env;
const client = new OpenAI({ baseURL: `${GW}/v1`, apiKey: KEY, maxRetries: 0, timeout: 20000 });
let failed = 0;
const ok = (n) => console.log(`ok ${n}`);
const fail = (n, why) => { failed++; console.log(`FAIL ${n}: ${why}`); };
const expect = (n, cond, why) => (cond ? ok(n) : fail(n, why));
async function step(name, fn) {
  try { await fn(); } catch (e) { fail(name, `${e.constructor.name}: ${e.message}`); }
}
const stats = async () => (await fetch(`${UPSTREAM}/stats`)).json();

await step("list models", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  expect("list models", ids.includes("fake-model"), `got ${JSON.stringify(ids)}`);
});

// models.retrieve (GET /v1/models/{id}) and the request id every answer carries, which
// the client exposes as _request_id on a result and request_id on an error.
await step("retrieve a model", async () => {
  const m = await client.models.retrieve("fake-model");
  expect("models.retrieve", m.id === "fake-model" && m.object === "model" && typeof m.created === "number" &&
         m.owned_by === "gpuaas", JSON.stringify(m));
  expect("models.retrieve: the request id", /^req_[0-9a-f]{32}$/.test(m._request_id ?? ""), String(m._request_id));
  try {
    await client.models.retrieve("no-such-model");
    fail("models.retrieve of an unknown model: NotFoundError", "it was found");
  } catch (e) {
    expect("models.retrieve of an unknown model: NotFoundError", e instanceof OpenAI.NotFoundError &&
           e.code === "model_not_found", `${e.constructor.name} ${e.status} ${e.code}`);
    expect("...with its request id", /^req_[0-9a-f]{32}$/.test(e.request_id ?? ""), String(e.request_id));
  }
});

await step("plain chat completion with usage", async () => {
  const r = await client.chat.completions.create({
    model: "fake-model", messages: [{ role: "user", content: "hello from node" }], max_tokens: 4 });
  expect("plain chat completion", r.choices[0].message.content === "tok0 tok1 tok2 tok3 ", JSON.stringify(r));
  expect("plain chat completion: the request id", /^req_[0-9a-f]{32}$/.test(r._request_id ?? ""), String(r._request_id));
  expect("plain chat completion usage", r.usage && r.usage.prompt_tokens === 3 && r.usage.completion_tokens === 4,
         JSON.stringify(r.usage));
});

await step("streamed chat completion with usage", async () => {
  const s = await client.chat.completions.create({
    model: "fake-model", messages: [{ role: "user", content: "stream please" }], max_tokens: 5, stream: true,
    stream_options: { include_usage: true } });
  let text = "", usage = null, chunks = 0;
  for await (const c of s) {
    chunks++;
    if (c.choices.length) text += c.choices[0].delta.content ?? "";
    if (c.usage) usage = c.usage;
  }
  expect("streamed chat completion", text === "tok0 tok1 tok2 tok3 tok4 ", `text ${JSON.stringify(text)}`);
  expect("streamed usage in the final chunk", usage && usage.completion_tokens === 5 && usage.prompt_tokens === 2,
         JSON.stringify(usage));
});

await step("stream without include_usage", async () => {
  const s = await client.chat.completions.create({
    model: "fake-model", messages: [{ role: "user", content: "no usage asked" }], max_tokens: 3, stream: true });
  let sawUsage = false, n = 0;
  for await (const c of s) { n++; if (c.usage) sawUsage = true; }
  expect("stream without include_usage shows no usage", !sawUsage && n === 3, `chunks ${n}, usage ${sawUsage}`);
});

await step("embeddings", async () => {
  const r = await client.embeddings.create({ model: "fake-model", input: "one two", encoding_format: "float" });
  expect("embeddings", r.data[0].embedding.length === 3 && r.usage.prompt_tokens === 2, JSON.stringify(r.usage));
});

await step("rate limit", async () => {
  const lim = new OpenAI({ baseURL: `${GW}/v1`, apiKey: LIMITED_KEY, maxRetries: 0 });
  const req = { model: "fake-model", messages: [{ role: "user", content: "hi" }], max_tokens: 1 };
  await lim.chat.completions.create(req);
  try {
    await lim.chat.completions.create(req);
    fail("429 reported as RateLimitError", "the second request was not limited");
  } catch (e) {
    expect("429 reported as RateLimitError", e instanceof OpenAI.RateLimitError && e.status === 429, `${e.constructor.name} ${e.status}`);
    expect("429 type and code", e.type === "requests" && e.code === "rate_limit_exceeded", `${e.type} ${e.code}`);
    const h = e.headers || {};
    expect("429 headers", h["x-ratelimit-remaining-requests"] === "0" && Number(h["retry-after"]) > 0 &&
           h["x-ratelimit-limit-requests"] === "1", JSON.stringify(h));
  }
});

// A tier of 100 tokens a day. The first request reserves 7 + 50 and spends 51; the
// second does not fit: a tokens-type 429, which the client must report as a
// RateLimitError with the x-ratelimit-*-tokens headers.
await step("token rate limit", async () => {
  const lim = new OpenAI({ baseURL: `${GW}/v1`, apiKey: TOKENS_KEY, maxRetries: 0 });
  const req = { model: "fake-model", messages: [{ role: "user", content: "hi" }], max_tokens: 50 };
  await lim.chat.completions.create(req);
  try {
    await lim.chat.completions.create(req);
    fail("tokens 429 reported as RateLimitError", "the second request was not limited");
  } catch (e) {
    expect("tokens 429 reported as RateLimitError", e instanceof OpenAI.RateLimitError && e.status === 429,
           `${e.constructor.name} ${e.status}`);
    expect("tokens 429 type and code", e.type === "tokens" && e.code === "rate_limit_exceeded", `${e.type} ${e.code}`);
    const h = e.headers || {};
    expect("tokens 429 headers", h["x-ratelimit-limit-tokens"] === "100" && Number(h["x-ratelimit-remaining-tokens"]) < 57 &&
           /^[0-9hms]+$/.test(h["x-ratelimit-reset-tokens"] ?? "") && Number(h["retry-after"]) > 0 &&
           h["x-should-retry"] === undefined, JSON.stringify(h));
  }
});

// A request larger than the whole budget can never succeed: the gateway says
// x-should-retry: false, and the official client, which retries 429s by default, must
// not send it again (the gateway counts every refusal in limited_calls).
await step("never-fitting request not retried", async () => {
  const limited = async () => {
    // per-user series are shown to an admin's token only
    const m = await (await fetch(`${GW}/metrics`, { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    // one series per user; this tier's keys all belong to the test's user, so the sum is its count
    return m.split("\n").filter((l) => l.startsWith('limited_calls{model="fake",tier="tiny",'))
      .reduce((n, l) => n + Number(l.split(" ").pop()), 0);
  };
  const before = await limited();
  const patient = new OpenAI({ baseURL: `${GW}/v1`, apiKey: TOKENS_KEY, maxRetries: 3 });
  const call = patient.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "hi" }], max_tokens: 500 });
  const timer = new Promise((r) => setTimeout(() => r("timeout"), 5000));
  const got = await Promise.race([call.then(() => "admitted", (e) => e), timer]);
  expect("never-fitting request: RateLimitError at once", got instanceof OpenAI.RateLimitError &&
         got.headers?.["x-should-retry"] === "false" && /lower max_tokens/.test(got.message), String(got));
  const n = (await limited()) - before;
  expect("never-fitting request: the client did not retry", n === 1, `the gateway refused it ${n} times`);
});

await step("client leaves mid-stream", async () => {
  const before = (await stats()).cancelled;
  const s = await client.chat.completions.create({
    model: "fake-model", messages: [{ role: "user", content: "SLOW and long" }], max_tokens: 100, stream: true });
  let n = 0;
  for await (const c of s) { if (++n === 2) break; }   // breaking out aborts the request
  let after = before;
  for (let i = 0; i < 50 && after <= before; i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = (await stats()).cancelled;
  }
  expect("disconnect mid-stream cancels the upstream", after > before, `cancelled ${before} -> ${after}`);
});

await step("revoked key", async () => {
  const id = KEY.split("_")[1];
  const r = await fetch(`${GW}/api/v1/keys/${id}`, { method: "DELETE", headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect("revoke through the REST API", r.status === 200, `status ${r.status}`);
  try {
    await client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "hi" }] });
    fail("revoked key refused", "the request succeeded");
  } catch (e) {
    expect("revoked key refused", e instanceof OpenAI.AuthenticationError && e.status === 401, `${e.constructor.name} ${e.status}`);
  }
});

process.exit(failed ? 1 : 0);
