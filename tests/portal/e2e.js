// End-to-end test of the portal: Playwright (playwright-core) drives Debian's Chromium,
// headless, against the real daemon that tests/integration/portal_e2e.sh started.
// Prints "ok NAME" / "FAIL NAME: why" lines (the integration runner counts them) and
// saves a screenshot of every page under $SHOTS_DIR.
// Env: GPUAAS_SERVER (http://127.0.0.1:PORT), ADMIN_TOKEN, SHOTS_DIR, CHROMIUM (optional).
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const path = require('path');

const BASE = process.env.GPUAAS_SERVER;
const ADMIN_TOKEN = process.env.ADMIN_TOKEN;
const SHOTS = process.env.SHOTS_DIR || path.join(__dirname, '../../build/portal-screenshots');
const T = 20000; // the longest any single expectation waits
let fails = 0;

function ok(name) { console.log('ok ' + name); }
function fail(name, why) { fails++; console.log('FAIL ' + name + ': ' + String(why).split('\n')[0]); }
async function step(name, fn) {
  const t0 = Date.now();
  try { await fn(); ok(name + ' (' + (Date.now() - t0) + ' ms)'); return true; } catch (e) { fail(name, e && e.message ? e.message : e); return false; }
}
function expect(cond, what) { if (!cond) throw new Error(what); }
async function shot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, 'portal-' + name + '.png'), fullPage: true });
}
async function textOf(page, sel) { return (await page.locator(sel).first().innerText({ timeout: T })).trim(); }
async function waitText(page, sel, re, ms = T) {
  const t0 = Date.now();
  let last = '';
  while (Date.now() - t0 < ms) {
    last = await page.locator(sel).first().innerText({ timeout: ms }).catch(() => '');
    if (re.test(last)) return last;
    await page.waitForTimeout(200);
  }
  throw new Error(sel + ' is "' + last.slice(0, 200) + '", never matched ' + re);
}

// A form field by its label; required fields' labels end in "(required)".
function field(page, label) {
  const esc = label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return page.getByLabel(new RegExp('^' + esc + '(\\s*\\(required\\))?$'));
}

async function signInPassword(page, user, pw) {
  await page.goto(BASE + '/login');
  await page.getByLabel('User name').fill(user);
  await page.getByLabel('Password', { exact: true }).fill(pw);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(BASE + '/', { timeout: T });
}

// Fill a template's form (label -> value) and go to its review page.
async function requestFromTemplate(page, title, values) {
  await page.goto(BASE + '/ui/new');
  await page.getByRole('link', { name: title }).click();
  for (const [label, v] of Object.entries(values)) await field(page, label).fill(String(v));
  await page.getByRole('button', { name: 'Review' }).click();
  await page.waitForSelector('pre.manifest', { timeout: T });
}

async function main() {
  fs.mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
    // a fresh profile: Playwright gives every launch its own temporary --user-data-dir
  });
  const view = { viewport: { width: 1366, height: 800 } };
  const admin = await (await browser.newContext(view)).newPage();
  const alice = await (await browser.newContext(view)).newPage();
  for (const p of [admin, alice]) { p.on('dialog', (d) => d.accept()); p.setDefaultTimeout(10000); }
  let blocker = '', session = '';

  await step('not signed in: / leads to the sign-in page', async () => {
    await admin.goto(BASE + '/');
    expect(admin.url() === BASE + '/login', 'landed on ' + admin.url());
    await shot(admin, 'login');
  });
  await step('wrong password is refused', async () => {
    await admin.getByLabel('User name').fill('admin');
    await admin.getByLabel('Password', { exact: true }).fill('not-the-password');
    await admin.getByRole('button', { name: 'Sign in', exact: true }).click();
    await waitText(admin, '.error', /Wrong user name or password/);
  });
  await step('admin signs in with the API token', async () => {
    await admin.getByText('Sign in with an API token instead').click();
    await admin.getByLabel('API token (gpt_…)').fill(ADMIN_TOKEN);
    await admin.getByRole('button', { name: 'Sign in with token' }).click();
    await admin.waitForURL(BASE + '/');
    expect((await textOf(admin, 'h1')) === 'My work', 'no home page');
  });
  await step('admin creates user alice (namespace team-a) with a password', async () => {
    await admin.goto(BASE + '/ui/admin');
    await admin.getByLabel('User name').fill('alice');
    await admin.getByLabel('Namespaces (comma-separated)').fill('team-a');
    await admin.getByLabel('Password (optional; 8 characters or more)').fill('correct horse battery');
    await admin.getByRole('button', { name: 'Create user' }).click();
    await waitText(admin, '.note', /User alice created.*gpt_/);
    await shot(admin, 'admin');
  });
  await step('a bad template is refused when applied, with the reason', async () => {
    await admin.goto(BASE + '/ui/admin');
    await admin.getByLabel(/Kueue objects/).fill('apiVersion: gpuaas.dev/v1alpha1\nkind: Template\nmetadata: {name: broken}\n' +
      'spec:\n  parameters:\n    properties:\n      gpus: {type: integer, minimum: 4, maximum: 2}\n  manifest: {apiVersion: batch/v1, kind: Job, metadata: {name: "${{ parameters.nope }}"}}\n');
    await admin.getByRole('button', { name: 'Apply' }).click();
    await waitText(admin, '.error', /minimum is larger than maximum/);
  });

  await step('markup in a template is applied and shown as text, never run', async () => {
    await admin.goto(BASE + '/ui/admin');
    await admin.getByLabel(/Kueue objects/).fill('apiVersion: gpuaas.dev/v1alpha1\nkind: Template\nmetadata:\n  name: zz-markup\n' +
      '  title: "<b>bold</b><script>window.pwned=1</script>"\n  description: "<img src=x onerror=window.pwned=2>"\n' +
      'spec:\n  parameters: {properties: {x: {type: string, title: "<i>x</i>"}}}\n' +
      '  manifest: {apiVersion: batch/v1, kind: Job, metadata: {name: x}}\n');
    await admin.getByRole('button', { name: 'Apply' }).click();
    await waitText(admin, '.note', /Template zz-markup created/);
    await admin.goto(BASE + '/ui/new');
    expect(await admin.getByText('<b>bold</b><script>window.pwned=1</script>').count() === 1, 'title not shown as text');
    await admin.getByRole('link', { name: '<b>bold</b><script>window.pwned=1</script>' }).click();
    await admin.waitForSelector('form.tform');
    expect(await admin.evaluate(() => window.pwned === undefined), 'a script ran');
    expect(await admin.locator('img, i').count() === 0, 'markup was rendered');
  });
  await step('alice signs in with her password', async () => {
    await signInPassword(alice, 'alice', 'correct horse battery');
    expect((await textOf(alice, 'h1')) === 'My work', 'no home page');
    expect(await alice.locator('nav >> text=Admin').count() === 0, 'a non-admin sees the Admin link');
  });
  await step('the catalog lists the shipped templates', async () => {
    await alice.goto(BASE + '/ui/new');
    for (const t of ['Interactive GPU session', 'Batch training job', 'Fine-tune a model'])
      expect(await alice.getByRole('link', { name: t }).count() === 1, 'missing template ' + t);
    // deploying a Model is for admins: a template alice may not submit is not offered
    expect(await alice.getByRole('link', { name: 'Deploy a model' }).count() === 0, 'alice is offered Deploy a model');
    const r = await alice.request.get(BASE + '/ui/new/deploy-model');
    expect(r.status() === 404, 'the deploy-model form answered alice ' + r.status());
    await shot(alice, 'catalog');
  });
  await step('the form validates in the browser before it is sent', async () => {
    await alice.getByRole('link', { name: 'Interactive GPU session' }).click();
    await shot(alice, 'form');
    await field(alice, 'GPUs').fill('99');
    await alice.getByRole('button', { name: 'Review' }).click();
    await waitText(alice, '.field-error', /GPUs must be at most 8/);
    expect(alice.url().endsWith('/ui/new/interactive-session'), 'the form was sent anyway');
    // pattern= must compile under the v flag, or Chromium ignores it (Bad_Queue went through)
    await field(alice, 'GPUs').fill('1');
    await field(alice, 'Queue').fill('Bad_Queue');
    expect(await field(alice, 'Queue').evaluate((e) => e.validity.patternMismatch), 'the browser accepts queue Bad_Queue');
    await field(alice, 'Queue').fill('main');
    expect(await field(alice, 'Queue').evaluate((e) => e.checkValidity()), 'the browser refuses queue main');
  });
  await step('the server validates too (a crafted post with 99 GPUs)', async () => {
    const csrf = await alice.locator('input[name=_csrf]').first().getAttribute('value');
    const r = await alice.request.post(BASE + '/ui/new/interactive-session', {
      form: { _csrf: csrf, namespace: 'team-a', queue: 'main', kind: 'shell', gpus: '99', hours: '1', action: 'review' } });
    expect(r.status() === 422, 'status ' + r.status());
    expect(/GPUs must be at most 8/.test(await r.text()), 'no message');
  });
  await step('request a GPU for training: review shows the Job, then it runs', async () => {
    await requestFromTemplate(alice, 'Batch training job', { 'Training steps': 600, 'Seconds per step': 1, 'Time limit (hours)': 1 });
    const m = await textOf(alice, 'pre.manifest');
    expect(/kind: Job/.test(m) && /kueue.x-k8s.io\/max-exec-time-seconds: "3600"/.test(m), 'manifest: ' + m.slice(0, 300));
    // the whole manifest: what the portal adds too, in a box that does not cut it
    expect(/gpuaas.dev\/requested-by: alice/.test(m) && /gpuaas.dev\/template: batch-training/.test(m), 'the review hides labels: ' + m);
    expect(await alice.locator('pre.manifest').evaluate((e) => e.scrollHeight <= e.clientHeight + 1), 'the manifest scrolls in its box');
    await shot(alice, 'review');
    await alice.getByRole('button', { name: 'Submit' }).click();
    await alice.waitForURL(/\/ui\/workloads\/team-a\/train-/);
    blocker = alice.url();
    await waitText(alice, '#status .badge', /Running/);
  });
  await step('a second request waits, and says why in plain words', async () => {
    await requestFromTemplate(alice, 'Interactive GPU session', { 'Time limit (hours)': 2 });
    await alice.getByRole('button', { name: 'Submit' }).click();
    await alice.waitForURL(/\/ui\/workloads\/team-a\/session-/);
    session = alice.url();
    await waitText(alice, '#status .badge', /Pending/);
    await waitText(alice, '#status .why', /Waiting for quota: needs 1 GPU, team-a has 0 free \(of 1\).*#1 in line/s);
    await waitText(alice, '#status .why', /Expected to start by .* at the latest/);
    const hist = await textOf(alice, '.timeline');
    expect(/Waiting for quota/.test(hist) && !/QuotaReserved|not yet|uses \d+ of/.test(hist), 'history in jargon: ' + hist);
    await shot(alice, 'workload-pending');
    await alice.goto(BASE + '/');
    await waitText(alice, '#work', /Pending[\s\S]*Waiting for quota: needs 1 GPU/);
    await waitText(alice, '#work', /left before its time limit/);
    // newest first: the session (asked for last) is the first row, before the training run
    const first = await textOf(alice, '#my-work tbody tr');
    expect(/session-/.test(first), 'the first row is not the newest: ' + first);
    await shot(alice, 'home');
  });
  await step('queues page shows the team quota in use', async () => {
    await alice.goto(BASE + '/ui/queues');
    await waitText(alice, '#cq-team-a', /nvidia\.com\/gpu[\s\S]*1 \/ 1/);
    expect(await alice.locator('#cq-team-b').count() === 0, 'alice sees team-b');
  });
  await step('admin raises the quota; the waiting session starts', async () => {
    await admin.goto(BASE + '/ui/queues');
    const q = admin.getByLabel('New nominal quota of nvidia.com/gpu in team-a');
    await q.fill('2');
    await q.fill('lots');
    await q.press('Enter');
    // a refused quota is said on its form, not on a bare error page
    await waitText(admin, '#cq-team-a .field-error', /Not changed: a quota is a quantity/);
    expect(await q.inputValue() === 'lots', 'the typed value was lost');
    await q.fill('2');
    await q.press('Enter'); // the keyboard submits it as well as the Set button
    await admin.waitForURL(BASE + '/ui/queues');
    await waitText(admin, '#cq-team-a', /2 \/ 2/);
    await shot(admin, 'queues');
    await alice.goto(session);
    await waitText(alice, '#status .badge', /Running/);
  });
  await step('its logs stream live on its page', async () => {
    await waitText(alice, '#logs', /ready: attach with gpuaas logs -f/);
    await waitText(alice, '#status', /Devices[\s\S]*GPU-/);
    await shot(alice, 'workload-running');
  });
  await step('cancel it from its page', async () => {
    await alice.getByRole('button', { name: 'Cancel' }).click();
    await waitText(alice, '#status .badge', /Deactivated/);
    await waitText(alice, '#status', /cancelled by alice/);
    await alice.goto(blocker);
    await alice.getByRole('button', { name: 'Cancel' }).click();
    await waitText(alice, '#status .badge', /Deactivated/);
  });
  await step('GPUs page draws live charts', async () => {
    await alice.goto(BASE + '/ui/gpus');
    await alice.waitForSelector('svg.spark text', { timeout: T });
    await alice.waitForTimeout(2500);
    await shot(alice, 'gpus');
  });
  await step('Reports page: alice sees the GPU time of team-a as bars and a table, and no other namespace', async () => {
    await alice.goto(BASE + '/ui/reports?since=1d');
    await alice.waitForSelector('#report-chart g[data-namespace="team-a"] rect.bar-fg', { timeout: T });
    const names = await alice.locator('#report-chart g[data-namespace]').evaluateAll(gs => gs.map(g => g.dataset.namespace));
    expect(names.join(',') === 'team-a', 'bars for ' + names.join(','));
    const w = Number(await alice.locator('#report-chart g[data-namespace="team-a"] rect.bar-fg').getAttribute('width'));
    expect(w > 0, 'the allocated bar has no width');
    const row = await textOf(alice, '#report-table tbody tr[data-namespace="team-a"]');
    expect(/H100/.test(row), 'row is ' + row);
    await shot(alice, 'reports');
  });
  await step('a non-admin cannot reach the admin pages', async () => {
    const r = await alice.goto(BASE + '/ui/admin');
    expect(r.status() === 403, 'status ' + r.status());
    expect(/Only admins/.test(await textOf(alice, 'main')), 'no explanation');
    const csrf = await alice.locator('meta[name=csrf-token]').getAttribute('content');
    const p = await alice.request.post(BASE + '/ui/admin/create', { form: { _csrf: csrf, user: 'mallory', password: 'mallory-pass' } });
    expect(p.status() === 403, 'admin post status ' + p.status());
    const q = await alice.request.post(BASE + '/ui/queues/team-a/quota', { form: { _csrf: csrf, flavor: 'h100', resource: 'nvidia.com/gpu', quota: '8' } });
    expect(q.status() === 403, 'quota post status ' + q.status());
  });
  await step('a form post without the CSRF token is refused', async () => {
    const key = session.split('/ui/workloads/')[1];
    const r = await alice.request.post(BASE + '/ui/workloads/' + key + '/cancel', { form: { x: '1' } });
    expect(r.status() === 403 && /CSRF/.test(await r.text()), 'status ' + r.status());
    const w = await alice.request.post(BASE + '/ui/workloads/' + key + '/cancel', { form: { _csrf: 'A'.repeat(43) } });
    expect(w.status() === 403, 'wrong token: status ' + w.status());
    const csrf = await alice.locator('meta[name=csrf-token]').getAttribute('content');
    const o = await alice.request.post(BASE + '/ui/account', { headers: { Origin: 'http://evil.example' },
      form: { _csrf: csrf, password: 'evil-password', password2: 'evil-password' } });
    expect(o.status() === 403, 'a post from another origin answered ' + o.status());
    const a = await alice.request.get(BASE + '/api/v1/workloads');
    expect(a.status() === 401, 'the API with the cookie alone answered ' + a.status());
  });
  await step('Models: create an API key and use it against the gateway', async () => {
    await alice.goto(BASE + '/ui/models');
    const st = alice.locator('#gw-status');
    await alice.waitForFunction(() => document.querySelector('#gw-status').getAttribute('data-gateway'), null, { timeout: T });
    if ((await st.getAttribute('data-gateway')) === 'absent') {
      expect(/not part of this server yet/.test(await st.innerText()), 'no clear message');
      await shot(alice, 'models');
      console.log('  (the gateway is not in this build: checked the Models page degrades clearly)');
      return;
    }
    if (process.env.E2E_MODEL) {
      // the catalog, the key form and the playground offer only what alice's tiers open
      await waitText(alice, '#model-list', new RegExp(process.env.E2E_MODEL));
      expect(!/secret-llm/.test(await textOf(alice, '#model-list')), 'a model outside her tiers is shown');
      const tiers = await alice.locator('#key-tier option').allTextContents();
      expect(tiers.includes('default') && !tiers.includes('vision-only'), 'tiers offered: ' + tiers.join(', '));
      const models = await alice.locator('#chat-model option').allTextContents();
      expect(models.includes(process.env.E2E_MODEL) && !models.includes('secret-llm'), 'playground models: ' + models.join(', '));
    }
    // pattern= compiles under the v flag: the browser refuses Bad_Key itself
    await alice.getByLabel('Name', { exact: true }).fill('Bad_Key');
    expect(await alice.locator('#key-name').evaluate((e) => e.validity.patternMismatch), 'the browser accepts key name Bad_Key');
    // a key lives at most as long as its tier allows (maxKeyLifetime 90d in fixtures/tier.yaml)
    expect(await alice.locator('#key-days').getAttribute('max') === '90', 'days max ' + await alice.locator('#key-days').getAttribute('max'));
    await alice.getByLabel('Name', { exact: true }).fill('laptop');
    await alice.getByRole('button', { name: 'Create key' }).click();
    const key = await waitText(alice, '#new-key-value', /^gpa_/);
    await waitText(alice, '#key-rows', /laptop/);
    await shot(alice, 'models');
    const r = await alice.request.get(BASE + '/v1/models', { headers: { Authorization: 'Bearer ' + key.trim() } });
    expect(r.status() === 200, 'the gateway answered ' + r.status() + ' to the new key');
    if (process.env.E2E_MODEL) {
      // the playground streams a chat through /v1/chat/completions with the new key (filled in)
      await waitText(alice, '#model-list', new RegExp(process.env.E2E_MODEL + '[\\s\\S]*Ready'), T).catch(async () => {
        await alice.reload();
        await waitText(alice, '#model-list', /Ready/);
        await alice.locator('#chat-key').fill(key.trim());
      });
      await alice.locator('#chat-model').selectOption(process.env.E2E_MODEL);
      await alice.getByRole('button', { name: 'Send' }).click();
      await waitText(alice, '#chat-out', /\S/);
      await shot(alice, 'models');
    }
    await alice.locator('#key-rows button', { hasText: 'Revoke' }).first().click();
    await waitText(alice, '#key-rows', /Revoked/);
    const r2 = await alice.request.get(BASE + '/v1/models', { headers: { Authorization: 'Bearer ' + key.trim() } });
    expect(r2.status() === 401, 'a revoked key still works: ' + r2.status());
  });
  await step('sign-in through a trusted proxy maps groups to namespaces', async () => {
    const ctx = await browser.newContext({ ...view, extraHTTPHeaders: { 'X-Forwarded-User': 'Bob.Smith@example.com', 'X-Forwarded-Groups': 'vision,staff' } });
    const bob = await ctx.newPage();
    await bob.goto(BASE + '/ui/account');
    const t = await textOf(bob, 'main');
    expect(/bob-smith/.test(t) && /team-b/.test(t) && !/team-a/.test(t), 'account page: ' + t.slice(0, 200));
    if (process.env.E2E_MODEL) { // team-b's tier opens the model alice could not see
      await bob.goto(BASE + '/ui/models');
      await waitText(bob, '#model-list', /secret-llm/);
    }
    await ctx.close();
  });
  await step('an admin deploys a model from a template (a gateway Model)', async () => {
    const st = await (await admin.request.get(BASE + '/api/v1/tiers', { headers: { Authorization: 'Bearer ' + ADMIN_TOKEN } })).status();
    if (st !== 200) { console.log('  (no gateway in this build: deploying a Model is not checked)'); return; }
    await admin.goto(BASE + '/ui/new/deploy-model');
    await field(admin, 'Model name (what clients put in "model")').fill('portal-llm');
    await field(admin, 'Namespace that runs it').selectOption('team-b');
    await field(admin, 'Tier that may use it').fill('default');
    // the demo has no GPU and no weights: the stand-in for vLLM takes vLLM's command line
    await field(admin, 'Model server').selectOption('{bindir}/fake-openai');
    await admin.getByRole('button', { name: 'Review' }).click();
    const m = await textOf(admin, 'pre.manifest');
    expect(/kind: Model/.test(m) && /servedNames:\s*- portal-llm/.test(m) && /replicas: 1/.test(m), 'manifest: ' + m.slice(0, 400));
    await admin.getByRole('button', { name: 'Submit' }).click();
    await admin.waitForURL(BASE + '/ui/models');
    await waitText(admin, '#model-list', /portal-llm/);
    // and it works: its server starts and the model is Ready
    let state = '';
    for (let i = 0; i < 120 && state !== 'Ready'; i++) {
      const r = await admin.request.get(BASE + '/api/v1/models/portal-llm', { headers: { Authorization: 'Bearer ' + ADMIN_TOKEN } });
      state = r.status() === 200 ? (await r.json()).state : 'HTTP ' + r.status();
      if (state !== 'Ready') await new Promise((res) => setTimeout(res, 250));
    }
    expect(state === 'Ready', 'the deployed model is not Ready: ' + state);
    // a model's server is the gateway's, shown apart from the admin's own work (vLLM is not
    // here, so portal-llm's server fails and is restarted: a server that stays up is used)
    const idle = 'apiVersion: gpuaas.dev/v1alpha1\nkind: Model\nmetadata: {name: idle-llm}\nspec:\n  servedNames: [idle-llm]\n' +
      '  tiers: [default]\n  workload: {namespace: team-a, queue: main, command: [sleep, "600"], resources: {nvidia.com/gpu: "1"}}\n';
    const ap = await admin.request.post(BASE + '/api/v1/apply', { headers: { Authorization: 'Bearer ' + ADMIN_TOKEN,
      'Content-Type': 'application/yaml' }, data: idle });
    expect(ap.status() === 200, 'apply idle-llm answered ' + ap.status() + ' ' + (await ap.text()).slice(0, 200));
    await admin.goto(BASE + '/');
    await waitText(admin, '#model-servers', /maas-idle-llm-0[\s\S]*model server/);
    expect(await admin.locator('#my-work', { hasText: 'maas-idle-llm' }).count() === 0, 'a model server is mixed with my work');
    await shot(admin, 'home-model-servers');
    await admin.goto(BASE + '/ui/admin');
    await waitText(admin, '#tier-table', /default[\s\S]*60 requests a minute[\s\S]*90 days/);
  });
  await step('My work pages instead of cutting (55 more workloads)', async () => {
    let y = '';
    for (let i = 0; i < 55; i++)
      y += 'apiVersion: batch/v1\nkind: Job\nmetadata: {name: bulk-' + String(i).padStart(2, '0') + ', namespace: team-a, ' +
           'labels: {kueue.x-k8s.io/queue-name: main}}\nspec: {template: {spec: {containers: [{name: c, image: x, command: [sleep, "1"], ' +
           'resources: {requests: {nvidia.com/gpu: "8"}}}]}}}\n---\n';
    const r = await admin.request.post(BASE + '/api/v1/workloads', { headers: { Authorization: 'Bearer ' + ADMIN_TOKEN,
      'Content-Type': 'application/yaml' }, data: y });
    expect(r.status() < 300, 'bulk submit answered ' + r.status() + ' ' + (await r.text()).slice(0, 200));
    await alice.goto(BASE + '/');
    await waitText(alice, '.pager', /Newest 1–50 of 5\d/);
    expect(/bulk-54/.test(await textOf(alice, '#my-work tbody tr')), 'the newest bulk job is not first');
    await alice.getByRole('link', { name: 'Older' }).click();
    await waitText(alice, '#my-work', /train-/); // the oldest, never silently cut
  });
  // Bookings (issue 19): book a window from the form, see its block, try an overlapping one,
  // take a free window the refusal offers, book it. Three weeks ahead, in UTC, so every
  // window is in the future; as many GPUs as team-a's ClusterQueue has, so the overlap
  // cannot fit whatever the quota steps above left it at.
  await step('Bookings: book GPUs from the week calendar, and a free window after a conflict', async () => {
    const d = new Date(Date.now() + 21 * 86400000);
    d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));            // that week's Monday
    const day = d.toISOString().slice(0, 10);
    await alice.goto(BASE + '/ui/reservations?week=' + day + '&class=h100&tz=UTC');
    expect(/Bookings/.test(await textOf(alice, 'h1')), 'no Bookings page');
    const sub = await textOf(alice, 'p.sub');
    const m = /team-a (\d+)/.exec(sub);
    expect(m, 'team-a\'s capacity is not shown: ' + sub);
    const book = async (name, start, end) => {
      await alice.getByLabel('Namespace (the owner)').selectOption('team-a');
      await alice.getByLabel('Name', { exact: true }).fill(name);
      await alice.getByLabel('ClusterQueue (whose workloads use it)').selectOption('team-a');
      await alice.getByLabel('GPU class').selectOption('h100');
      await alice.getByLabel('GPUs', { exact: true }).fill(m[1]);
      if (start) await alice.getByLabel('Start', { exact: true }).fill(start);
      if (end) await alice.getByLabel('End', { exact: true }).fill(end);
      await alice.getByLabel('Time zone').fill('UTC');
      await alice.getByRole('button', { name: 'Book', exact: true }).click();
      await alice.waitForLoadState();
    };
    await book('e2e-standup', day + 'T09:00', day + 'T12:00');
    await waitText(alice, '#notice', /Booked team-a\/e2e-standup/);
    expect(await alice.locator('g.blk[data-name="team-a/e2e-standup"]').count() === 1, 'no block for the booking');
    await shot(alice, 'bookings');
    await book('e2e-clash', day + 'T10:00', day + 'T11:00');
    await waitText(alice, '#conflicts', /team-a\/e2e-standup/);
    await shot(alice, 'bookings-conflict');
    await alice.locator('#alternatives a.alt').first().click();
    await alice.waitForLoadState();
    const start = await alice.getByLabel('Start', { exact: true }).inputValue();
    expect(/^\d{4}-\d\d-\d\dT\d\d:\d\d$/.test(start), 'the alternative did not fill the start: ' + start);
    await book('e2e-later', null, null);
    await waitText(alice, '#notice', /Booked team-a\/e2e-later/);
    expect(await alice.locator('#cal-list li[data-name="team-a/e2e-later"]').count() === 1, 'the free window is not listed');
  });
  await step('pages fit a phone (390x844): no sideways scrolling', async () => {
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, storageState: await alice.context().storageState() });
    const phone = await ctx.newPage();
    for (const [name, url] of [['home', '/'], ['catalog', '/ui/new'], ['form', '/ui/new/interactive-session'], ['queues', '/ui/queues'],
                               ['workload', session.slice(BASE.length)], ['models', '/ui/models'], ['gpus', '/ui/gpus'],
                               ['reports', '/ui/reports'], ['reservations', '/ui/reservations']]) {
      await phone.goto(BASE + url);
      const [sw, iw] = await phone.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      expect(sw <= iw, name + ' is ' + sw + ' px wide on a ' + iw + ' px phone');
      if (name === 'queues' || name === 'workload') await shot(phone, 'phone-' + name); // the two docs/portal.md shows
    }
    await ctx.close();
  });
  await step('sign out ends the session', async () => {
    await alice.getByRole('button', { name: 'Sign out' }).click();
    await alice.waitForURL(BASE + '/login');
    const r = await alice.goto(BASE + '/ui/queues');
    expect(alice.url() === BASE + '/login', 'still signed in: ' + r.status());
  });
  await step('repeated wrong passwords are throttled (last: it locks out this address for a minute)', async () => {
    let last = '';
    for (let i = 0; i < 12 && !/Too many/.test(last); i++) {
      await alice.goto(BASE + '/login');
      await alice.getByLabel('User name').fill('alice');
      await alice.getByLabel('Password', { exact: true }).fill('wrong-' + i);
      await alice.getByRole('button', { name: 'Sign in', exact: true }).click();
      last = await textOf(alice, '.error');
    }
    expect(/Too many failed sign-ins/.test(last), 'never throttled: ' + last);
    await alice.goto(BASE + '/login');
    await alice.getByLabel('User name').fill('alice');
    await alice.getByLabel('Password', { exact: true }).fill('correct horse battery');
    await alice.getByRole('button', { name: 'Sign in', exact: true }).click();
    expect(/Too many/.test(await textOf(alice, '.error')), 'the right password got through the lock');
  });
  await browser.close();
}

main().then(() => process.exit(fails ? 1 : 0), (e) => { fail('browser', e && e.stack ? e.stack : e); process.exit(1); });
