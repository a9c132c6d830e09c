/* gpuaas portal: the little JavaScript the pages use. Plain ES2020, no framework, no
 * build step. Pages work without it except live logs, charts and the Models page.
 * Every call to the REST API sends the session's CSRF token (X-CSRF-Token). */
'use strict';
(function () {
  const csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || '';
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

  async function api(method, path, body) {
    const opt = { method, headers: { 'X-CSRF-Token': csrf }, credentials: 'same-origin' };
    if (body !== undefined) { opt.headers['Content-Type'] = 'application/json'; opt.body = JSON.stringify(body); }
    const r = await fetch(path, opt);
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    return { status: r.status, ok: r.ok, data };
  }
  function errText(res) {
    const e = res.data && res.data.error;
    return (e && (e.message || e)) || ('HTTP ' + res.status);
  }
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') n.textContent = v; else if (k.startsWith('on')) n.addEventListener(k.slice(2), v); else n.setAttribute(k, v);
    }
    for (const k of kids) if (k != null) n.append(k);
    return n;
  }
  const SVG = 'http://www.w3.org/2000/svg';
  function svgEl(tag, attrs) {
    const n = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
    return n;
  }

  /* ---- forms: confirmation, progress, validation ------------------------------------ */
  function fieldMessage(input) {
    const v = input.validity, label = (input.labels && input.labels[0] && input.labels[0].textContent.replace(' (required)', '')) || input.name;
    if (v.valueMissing) return label + ' is required';
    if (v.rangeUnderflow) return label + ' must be at least ' + input.min;
    if (v.rangeOverflow) return label + ' must be at most ' + input.max;
    if (v.stepMismatch || v.badInput) return label + ' must be a whole number';
    if (v.tooShort) return label + ' needs at least ' + input.minLength + ' characters';
    if (v.tooLong) return label + ' may have at most ' + input.maxLength + ' characters';
    if (v.patternMismatch) return label + ' does not have the expected form (' + input.pattern + ')';
    return input.validationMessage;
  }
  function validate(form) {
    let first = null;
    for (const f of $$('.field', form)) {
      const input = $('input, select, textarea', f);
      const old = $('.field-error.js', f);
      if (old) old.remove();
      f.classList.remove('invalid');
      if (!input || input.checkValidity()) continue;
      f.classList.add('invalid');
      f.append(el('p', { class: 'field-error js', role: 'alert', text: fieldMessage(input) }));
      if (!first) first = input;
    }
    if (first) first.focus();
    return !first;
  }
  document.addEventListener('submit', (ev) => {
    const form = ev.target;
    if (form.hasAttribute('data-validate') && !validate(form)) { ev.preventDefault(); return; }
    const q = form.getAttribute('data-confirm');
    if (q && !window.confirm(q)) { ev.preventDefault(); return; }
    const p = form.getAttribute('data-progress');
    if (p && !ev.defaultPrevented) {
      /* a disabled button is not sent: carry the clicked one's value in a hidden field */
      const s = ev.submitter;
      if (s && s.name) form.append(el('input', { type: 'hidden', name: s.name, value: s.value }));
      for (const b of $$('button', form)) b.disabled = true;
      if (s) { s.classList.add('busy'); s.textContent = p; }
    }
  });
  for (const input of $$('input[type=file][data-load-into]')) {
    input.addEventListener('change', () => {
      const f = input.files[0], target = document.getElementById(input.getAttribute('data-load-into'));
      if (!f || !target) return;
      if (f.size > 262144) { window.alert('That file is larger than 256 KiB.'); return; }
      f.text().then((t) => { target.value = t; target.focus(); });
    });
  }

  /* ---- live sections: re-read the page and swap the section --------------------------- */
  for (const sec of $$('[data-refresh]')) {
    const every = Math.max(1, parseInt(sec.getAttribute('data-refresh'), 10)) * 1000;
    setInterval(async () => {
      if (document.hidden || sec.contains(document.activeElement)) return;
      try {
        const r = await fetch(location.href, { credentials: 'same-origin' });
        if (!r.ok || r.redirected) return;
        const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
        const fresh = doc.getElementById(sec.id);
        if (!fresh) return;
        const open = $$('details', sec).map((d) => d.open);
        sec.innerHTML = fresh.innerHTML;
        $$('details', sec).forEach((d, i) => { if (open[i]) d.open = true; });
        drawSparks();
        if (lastGpus) lastGpus.forEach(slices);
      } catch (e) { /* the next round tries again */ }
    }, every);
  }

  /* ---- live logs ------------------------------------------------------------------------ */
  const logs = $('pre[data-logs]');
  if (logs) streamLogs(logs);
  async function streamLogs(pre) {
    const url = pre.getAttribute('data-logs');
    let got = false;
    try {
      const r = await fetch(url, { headers: { 'X-CSRF-Token': csrf }, credentials: 'same-origin' });
      if (!r.ok) { pre.textContent = 'Logs are not available (' + r.status + ').'; return; }
      const reader = r.body.getReader(), dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
        if (!got) { pre.textContent = ''; got = true; }
        pre.textContent += dec.decode(value, { stream: true });
        if (pre.textContent.length > 400000) pre.textContent = pre.textContent.slice(-300000);
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      }
      pre.append('\n— end of output —');
      pre.setAttribute('data-done', '1');
    } catch (e) {
      setTimeout(() => streamLogs(pre), 3000);
    }
  }

  /* ---- GPU charts ------------------------------------------------------------------------ */
  const samples = {};
  let lastGpus = null;
  function drawSparks() {
    for (const svg of $$('svg.spark')) {
      const s = samples[svg.getAttribute('data-gpu') + '/' + svg.getAttribute('data-metric')] || [];
      svg.replaceChildren();
      const w = 240, h = 60, n = 60;
      const pts = s.slice(-n).map((v, i, a) => [(w * (i + n - a.length)) / (n - 1), h - 4 - (v.pct / 100) * (h - 16)]);
      if (pts.length) {
        const line = pts.map((p) => p[0].toFixed(1) + ',' + p[1].toFixed(1)).join(' ');
        svg.append(svgEl('polygon', { class: 'area', points: pts[0][0].toFixed(1) + ',' + h + ' ' + line + ' ' + pts[pts.length - 1][0].toFixed(1) + ',' + h }));
        svg.append(svgEl('polyline', { points: line }));
      }
      const last = s[s.length - 1];
      const t = svgEl('text', { x: 4, y: 11 });
      t.textContent = last ? last.label : 'sampling…';
      svg.append(t);
    }
  }
  function memBytes(q) {
    if (typeof q === 'number') return q;
    const m = /^([0-9.]+)\s*([KMGT]i?)?$/.exec(String(q || ''));
    if (!m) return 0;
    const mult = { K: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1048576, Gi: 1073741824, Ti: 1099511627776 };
    return parseFloat(m[1]) * (m[2] ? mult[m[2]] : 1);
  }
  function push(uuid, metric, pct, label) {
    const k = uuid + '/' + metric;
    (samples[k] = samples[k] || []).push({ pct: Math.max(0, Math.min(100, pct)), label });
    if (samples[k].length > 120) samples[k].shift();
  }
  function totalMiB(g) { return g.memoryMiB || memBytes(g.memory) / 1048576; }
  function slices(g) {
    const box = document.querySelector('[data-slices="' + CSS.escape(g.uuid) + '"]');
    if (!box) return;
    box.replaceChildren();
    for (const m of g.migDevices || []) {
      const pct = m.memoryMiB ? (100 * (m.memoryUsedMiB || 0)) / m.memoryMiB : 0;
      const bar = svgEl('svg', { class: 'bar', viewBox: '0 0 200 12', width: 120, height: 12, role: 'img',
        'aria-label': m.profile + ' memory ' + pct.toFixed(0) + ' %' });
      bar.append(svgEl('rect', { class: 'bar-bg', width: 200, height: 12, rx: 3 }), svgEl('rect', { class: 'bar-fg', width: 2 * pct, height: 12, rx: 3 }));
      box.append(el('li', {}, el('b', { text: 'MIG ' + m.profile }), ' ', bar, ' ',
        el('span', { class: 'sub', text: (m.memoryUsedMiB || 0) + ' / ' + m.memoryMiB + ' MiB' })));
    }
    if (g.mode && g.mode !== 'exclusive' && !(g.migDevices || []).length)
      box.append(el('li', { class: 'sub', text: g.mode + (g.replicas ? ', ' + g.replicas + ' replicas of ' + g.resource : '') }));
  }
  async function sampleGpus() {
    if (document.hidden) return;
    const res = await api('GET', '/api/v1/gpus');
    if (!res.ok) return;
    lastGpus = res.data.items || [];
    for (const g of lastGpus) {
      const busy = (g.workloads || []).length > 0, total = totalMiB(g);
      if (typeof g.utilization === 'number') push(g.uuid, 'util', g.utilization, g.utilization + ' % utilised');
      else push(g.uuid, 'util', busy ? 100 : 0, busy ? 'allocated (utilisation not reported)' : 'idle');
      if (typeof g.memoryUsedMiB === 'number' && total) {
        const p = (100 * g.memoryUsedMiB) / total;
        push(g.uuid, 'mem', p, g.memoryUsedMiB + ' of ' + Math.round(total) + ' MiB used');
      } else push(g.uuid, 'mem', busy ? 100 : 0, busy ? 'allocated: ' + g.memory : 'free: ' + (g.memory || '?'));
      slices(g);
    }
    drawSparks();
  }
  /* the last 10 minutes the inventory sampled, so a chart does not start empty */
  async function seedHistory() {
    const res = await api('GET', '/api/v1/gpus');
    for (const g of (res.ok && res.data.items) || []) {
      const h = await api('GET', '/api/v1/gpus/' + encodeURIComponent(g.uuid) + '/utilization?window=10m');
      const total = totalMiB(g);
      for (const x of (h.ok && h.data.samples) || []) {
        if (x.utilization >= 0) push(g.uuid, 'util', x.utilization, x.utilization + ' % utilised');
        if (total) push(g.uuid, 'mem', (100 * x.memoryUsedMiB) / total, x.memoryUsedMiB + ' of ' + Math.round(total) + ' MiB used');
      }
    }
  }
  if ($('svg.spark')) seedHistory().finally(() => { sampleGpus(); setInterval(sampleGpus, 2000); });

  /* ---- Models: the gateway's catalog, keys, usage, playground ----------------------------- */
  const app = $('[data-models-app]');
  if (app) models();
  async function models() {
    // the catalog, the key form's tiers and the playground's models come from the server,
    // cut down to what the user's tiers open; this wires keys, usage and the chat
    const status = $('#gw-status');
    if (status.getAttribute('data-gateway') !== 'present') return;
    const origin = $('code.origin', status);
    if (origin) origin.textContent = location.origin + '/v1';
    const keysRes = await api('GET', '/api/v1/keys');
    if (!keysRes.ok) { status.textContent = 'The model gateway answered: ' + errText(keysRes); return; }
    for (const id of ['keys', 'usage', 'playground']) if ($('#' + id)) $('#' + id).hidden = false;
    renderKeys(keysRes.data.items || []);
    const form = $('#key-form');
    // a key lives at most as long as its tier allows: the days field's max follows the tier
    const syncDays = () => {
      const o = form.tier.selectedOptions[0], d = form.days, max = o && o.getAttribute('data-max-days');
      if (!max) return;
      d.max = max;
      $('#key-days-h').textContent = 'at most ' + max + ' for this tier';
      if (+d.value > +max) d.value = max;
    };
    if (form) form.tier.addEventListener('change', syncDays);
    if (form) form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const f = ev.target, btn = $('button[type=submit]', f);
      if (!f.reportValidity()) return;
      const opt = f.tier.selectedOptions[0];
      btn.disabled = true; btn.classList.add('busy');
      const res = await api('POST', '/api/v1/keys', { name: f.name.value, tier: opt.value, namespace: opt.getAttribute('data-ns'),
                                                      expires: (f.days.value || 30) + 'd' });
      btn.disabled = false; btn.classList.remove('busy');
      if (!res.ok) { window.alert('Key not created: ' + errText(res)); return; }
      $('#new-key-value').textContent = res.data.key;
      $('#new-key').hidden = false;
      if ($('#chat-key')) $('#chat-key').value = res.data.key;
      f.reset();
      syncDays();
      const again = await api('GET', '/api/v1/keys');
      renderKeys((again.data && again.data.items) || []);
    });
    if ($('#copy-key')) $('#copy-key').addEventListener('click', async () => {
      try { await navigator.clipboard.writeText($('#new-key-value').textContent); $('#copy-key').textContent = 'Copied'; }
      catch (e) { window.getSelection().selectAllChildren($('#new-key-value')); $('#copy-key').textContent = 'Press Ctrl+C'; }
    });
    usageChart();
    if ($('#chat-form')) $('#chat-form').addEventListener('submit', chat);
  }
  function renderKeys(items) {
    const body = $('#key-rows');
    body.replaceChildren();
    for (const k of items) {
      const revoke = k.state === 'Active'
        ? el('button', { type: 'button', class: 'danger', onclick: async () => {
            if (!window.confirm('Revoke key ' + k.name + '? Requests with it fail at once.')) return;
            const r = await api('DELETE', '/api/v1/keys/' + encodeURIComponent(k.id));
            if (!r.ok) { window.alert(errText(r)); return; }
            const again = await api('GET', '/api/v1/keys');
            renderKeys((again.data && again.data.items) || []);
          }, text: 'Revoke' }) : el('span', { class: 'sub', text: k.state });
      body.append(el('tr', {}, el('td', { text: k.name }), el('td', {}, el('code', { text: 'gpa_' + k.id + '_…' })),
        el('td', { text: k.tier }), el('td', { text: (k.expiresAt || '').slice(0, 10) }), el('td', {}, revoke)));
    }
    if (!items.length) body.append(el('tr', {}, el('td', { colspan: '5', class: 'sub', text: 'No keys yet.' })));
  }
  async function usageChart() {
    const res = await api('GET', '/api/v1/usage?group_by=model&since=7d');
    const svg = $('#usage-chart');
    const items = (res.ok && res.data.items) || [];
    svg.replaceChildren();
    if (!items.length) { const t = svgEl('text', { x: 20, y: 100 }); t.textContent = 'No requests in the last 7 days.'; svg.append(t); return; }
    const max = Math.max(...items.map((i) => i.totalTokens || 0), 1), bw = Math.min(80, 520 / items.length);
    items.forEach((it, i) => {
      const x = 50 + i * (bw + 12), hp = (150 * (it.promptTokens || 0)) / max, hc = (150 * (it.completionTokens || 0)) / max;
      svg.append(svgEl('rect', { class: 'b1', x, y: 170 - hp, width: bw, height: hp }));
      svg.append(svgEl('rect', { class: 'b2', x, y: 170 - hp - hc, width: bw, height: hc }));
      const t = svgEl('text', { x, y: 186 }); t.textContent = it.group; svg.append(t);
      const v = svgEl('text', { x, y: 164 - hp - hc }); v.textContent = (it.totalTokens || 0) + ' tok · ' + it.requests + ' req'; svg.append(v);
    });
    const legend = svgEl('text', { x: 50, y: 14 }); legend.textContent = 'tokens per model: prompt (lower) and completion (upper)'; svg.append(legend);
  }
  async function chat(ev) {
    ev.preventDefault();
    const out = $('#chat-out'), btn = $('button[type=submit]', ev.target);
    btn.disabled = true; btn.classList.add('busy'); out.textContent = '';
    try {
      const r = await fetch('/v1/chat/completions', {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + $('#chat-key').value },
        body: JSON.stringify({ model: $('#chat-model').value, stream: true, messages: [{ role: 'user', content: $('#chat-msg').value }] }),
      });
      if (!r.ok) { const e = await r.json().catch(() => ({})); out.textContent = 'Error ' + r.status + ': ' + ((e.error && e.error.message) || ''); return; }
      const reader = r.body.getReader(), dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const ev2 = buf.slice(0, i); buf = buf.slice(i + 2);
          const line = ev2.split('\n').find((l) => l.startsWith('data: '));
          if (!line || line === 'data: [DONE]') continue;
          try { const j = JSON.parse(line.slice(6)); const d = j.choices && j.choices[0] && j.choices[0].delta; if (d && d.content) out.textContent += d.content; }
          catch (e) { /* not JSON: skip */ }
        }
      }
    } finally {
      btn.disabled = false; btn.classList.remove('busy');
      setTimeout(usageChart, 3000); // usage is written in batches, shortly after the answer
    }
  }
})();
