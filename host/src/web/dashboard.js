// The dashboard's script. Pages are rendered by the server; this adds the actions, each
// a call to the API with the session's CSRF token: sign out, switch workspace, and any
// button with data-method/data-path (optionally data-confirm, and data-then: where to go
// afterwards; by default the page reloads). Failures are announced in #notice.
'use strict';

const csrf = document.querySelector('meta[name="csrf-token"]').content;
const notice = document.getElementById('notice');

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: { 'x-csrf-token': csrf, 'content-type': 'application/json' },
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.ok) return null;
  const text = await response.text();
  try {
    return JSON.parse(text).error.message;
  } catch {
    return `The server answered ${response.status}`;
  }
}

function fail(message) {
  notice.textContent = message;
  notice.className = 'error';
}

// On a phone the navigation folds under a Menu button (see the style sheet).
document.documentElement.classList.add('js');
const menu = document.getElementById('menu');
if (menu) {
  menu.addEventListener('click', () => {
    const open = menu.closest('header').classList.toggle('open');
    menu.setAttribute('aria-expanded', String(open));
  });
}

// The theme: the system's, or light or dark as chosen here (kept in this browser).
const themeSwitch = document.getElementById('theme');
function applyTheme(theme) {
  if (theme) document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}
try {
  const chosen = localStorage.getItem('tocsin-theme') || '';
  applyTheme(chosen);
  if (themeSwitch) themeSwitch.value = chosen;
} catch {
  // Storage may be off; the system's theme applies.
}
themeSwitch?.addEventListener('change', () => {
  applyTheme(themeSwitch.value);
  try { localStorage.setItem('tocsin-theme', themeSwitch.value); } catch { /* not kept */ }
});

document.getElementById('sign-out')?.addEventListener('click', async () => {
  await api('POST', '/v1/auth/logout');
  location.assign('/');
});

document.getElementById('workspace-switch')?.addEventListener('change', async (event) => {
  const error = await api('PATCH', '/v1/auth/session', { workspaceId: event.target.value });
  if (error) return fail(error);
  location.assign('/');
});

// Listened for on the document, so content a live page reads again keeps working.
document.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-method][data-path]');
  if (!button) return;
  if (button.dataset.confirm && !confirm(button.dataset.confirm)) return;
  button.disabled = true;
  const error = await api(button.dataset.method, button.dataset.path, button.dataset.body ? JSON.parse(button.dataset.body) : undefined);
  button.disabled = false;
  if (error) return fail(error);
  if (button.dataset.then) location.assign(button.dataset.then);
  else location.reload();
});

// Rows of names and values (a map such as headers): add one, remove one.
document.addEventListener('click', (event) => {
  const add = event.target.closest('button[data-add-pair]');
  if (add) {
    const rows = add.closest('.pairs');
    const last = rows.querySelectorAll('.pair');
    const row = last[last.length - 1].cloneNode(true);
    for (const input of row.querySelectorAll('input')) input.value = '';
    for (const select of row.querySelectorAll('select')) select.selectedIndex = 0;
    add.before(row);
    row.querySelector('input').focus();
    return;
  }
  const remove = event.target.closest('button[data-remove-pair]');
  if (remove) {
    const row = remove.closest('.pair');
    if (row.parentElement.querySelectorAll('.pair').length > 1) row.remove();
    else for (const input of row.querySelectorAll('input')) input.value = '';
  }
});

// Copy a field's text (a heartbeat's ping URL and the lines that call it).
document.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-copy]');
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  field.select();
  try {
    await navigator.clipboard.writeText(field.value);
  } catch {
    document.execCommand('copy');
  }
  notice.textContent = 'Copied.';
  notice.className = '';
});

// Acknowledge with a note.
document.addEventListener('submit', async (event) => {
  const form = event.target;
  if (form.id !== 'acknowledge') return;
  event.preventDefault();
  const note = form.elements.note.value.trim();
  const error = await api('POST', form.dataset.path, note ? { note } : {});
  if (error) return fail(error);
  location.reload();
});

// Live pages (server-sent events of the workspace's committed changes, see /events). The
// overview updates a row in place for a check that leaves its monitor's state as it was;
// otherwise a page reads itself again when something it shows changed (at most every
// few seconds, never while a field on it is being edited) and swaps its content.
const live = document.querySelector('main[data-live]');
if (live && window.EventSource) {
  const kind = live.dataset.live;
  const monitorId = live.dataset.monitor;
  const incidentId = live.dataset.incident;
  const EVERY = kind === 'overview' ? 3000 : 1500;
  let last = 0;
  let timer = null;
  let reading = false;

  const editing = () => {
    const el = document.activeElement;
    return el && el !== document.body && el.closest('main') && el.matches('input:not([readonly]), textarea:not([readonly]), select');
  };
  async function readAgain() {
    timer = null;
    if (reading) return later();
    if (editing()) {
      document.activeElement.addEventListener('blur', later, { once: true });
      return;
    }
    reading = true;
    last = Date.now();
    try {
      // Marked as the page's own reading, so an open tab does not keep the session alive.
      const response = await fetch(location.href, { credentials: 'same-origin', headers: { accept: 'text/html', 'x-tocsin-live': '1' } });
      if (!response.ok) return;
      const html = new DOMParser().parseFromString(await response.text(), 'text/html');
      const fresh = html.querySelector('main[data-live]');
      const current = document.querySelector('main[data-live]');
      if (fresh && current && !editing()) current.replaceChildren(...fresh.childNodes);
    } finally {
      reading = false;
    }
  }
  function later() {
    if (timer) return;
    timer = setTimeout(readAgain, Math.max(0, last + EVERY - Date.now()));
  }

  // A check of a monitor on the overview whose state it did not change.
  function inPlace(c) {
    const row = document.querySelector(`#monitors tr[data-id="${CSS.escape(c.monitorId)}"]`);
    if (!row) return !c.changed;
    if (c.changed) return false;
    const state = row.querySelector('[data-field="state"]');
    state.textContent = c.state;
    state.className = `state ${c.state}`;
    row.querySelector('[data-field="response"]').textContent = c.responseTimeMs == null ? '–' : `${c.responseTimeMs} ms`;
    const checked = row.querySelector('time');
    if (checked) {
      checked.dateTime = new Date(c.checkedAt).toISOString();
      checked.textContent = 'just now';
    }
    const bar = row.querySelector('.beats.mini');
    if (bar) {
      const beat = document.createElement('span');
      beat.className = `beat ${c.maintenance ? 'maintenance' : c.ok ? 'up' : 'down'}`;
      const response = c.responseTimeMs == null ? 'no response' : `${c.responseTimeMs} ms`;
      const result = c.maintenance ? 'under maintenance' : c.ok ? 'ok' : `failed: ${c.reason || 'no reason given'}`;
      beat.title = `${new Date(c.checkedAt).toLocaleTimeString()}, ${response}, ${result}`;
      bar.append(beat);
      while (bar.children.length > 20) bar.firstElementChild.remove();
      const failed = bar.querySelectorAll('.beat.down').length;
      bar.setAttribute('aria-label', `Last ${bar.children.length} checks: ${failed} failed`);
    }
    return true;
  }

  function shown(c) {
    switch (kind) {
      case 'overview':
        return c.kind === 'monitor' || (c.kind === 'check' && !inPlace(c));
      case 'monitor':
        return c.monitorId === monitorId && c.kind !== 'delivery';
      case 'incidents':
        return c.kind === 'incident';
      case 'incident':
        return (c.kind === 'incident' || c.kind === 'delivery') && c.incidentId === incidentId;
      default:
        return false;
    }
  }

  const source = new EventSource('/events');
  let broken = false;
  source.addEventListener('changes', (event) => {
    let again = false;
    for (const c of JSON.parse(event.data)) again = shown(c) || again;
    if (again) later();
  });
  source.addEventListener('missed', later);
  source.addEventListener('error', () => { broken = true; });
  // Back after a break (a restart, a lost connection): what changed meanwhile was not told.
  source.addEventListener('open', () => {
    if (broken) later();
    broken = false;
  });
}

// Monitor forms (generated from the plugin's schema): read each field by its kind, send
// JSON to the API, and show the API's field errors next to their fields.
function readField(el) {
  const kind = el.dataset.kind;
  const text = (el.value || '').trim();
  switch (kind) {
    case 'boolean': return el.checked;
    case 'number': case 'decimal': return text === '' ? undefined : (Number.isFinite(Number(text)) ? Number(text) : text);
    case 'pairs': {
      const map = {};
      for (const row of el.querySelectorAll('.pair')) {
        const name = row.querySelector('.pair-name').value.trim();
        if (name) map[name] = row.querySelector('.pair-value').value;
      }
      return Object.keys(map).length ? map : undefined;
    }
    case 'records': {
      // Rows of small objects (JSON assertions): a row with nothing typed is left out; a
      // cell marked JSON is read as JSON when it is JSON (200, true, "200"), else as text.
      const list = [];
      for (const row of el.querySelectorAll('.pair')) {
        const item = {};
        let typed = false;
        for (const cell of row.querySelectorAll('[data-key]')) {
          const v = cell.value.trim();
          if (v === '') continue;
          if (cell.tagName !== 'SELECT') typed = true;
          if (cell.dataset.json) {
            try { item[cell.dataset.key] = JSON.parse(v); } catch { item[cell.dataset.key] = v; }
          } else item[cell.dataset.key] = v;
        }
        if (typed) list.push(item);
      }
      return list;
    }
    case 'list': return text ? text.split('\n').map((l) => l.trim()).filter(Boolean) : undefined;
    case 'csv': return text.split(',').map((t) => t.trim()).filter(Boolean);
    case 'nullable': return text === '' ? null : text;
    case 'nullable-number': return text === '' ? null : (Number.isFinite(Number(text)) ? Number(text) : text);
    case 'ids': return [...el.querySelectorAll('input[type="checkbox"]:checked')].map((c) => c.value);
    case 'json': {
      if (!text) return undefined;
      try { return JSON.parse(text); } catch { throw new Error(`${el.name}: not valid JSON`); }
    }
    default: return text === '' ? undefined : text;
  }
}
function showErrors(details) {
  let first = null;
  for (const d of details) {
    // `url`, `config.port`, `jsonAssertions[0].path`: the field is the first name.
    const name = d.field.replace(/^config\./, '').split(/[.[]/)[0];
    const slot = document.getElementById(`error-${name}`);
    if (!slot) { fail(`${d.field} ${d.message}`); continue; }
    slot.textContent = `${d.field} ${d.message}`;
    const input = document.getElementById(`f-${name}`);
    if (input) { input.setAttribute('aria-invalid', 'true'); first = first || input; }
  }
  if (first) first.focus();
}
document.addEventListener('submit', async (event) => {
  const monitorForm = event.target.closest('form[data-plugin-form]');
  if (!monitorForm) return;
  event.preventDefault();
  for (const slot of monitorForm.querySelectorAll('.error')) slot.textContent = '';
  for (const el of monitorForm.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  notice.textContent = '';
  const body = {};
  const config = {};
  const topLevel = monitorForm.dataset.topLevel === 'true';
  try {
    for (const el of monitorForm.querySelectorAll('[data-kind]')) {
      const value = readField(el);
      if (value === undefined) continue;
      (el.dataset.plugin && !topLevel ? config : body)[el.dataset.name || el.name] = value;
    }
  } catch (e) {
    return fail(e.message);
  }
  if (monitorForm.dataset.method === 'POST') body.type = monitorForm.dataset.type;
  if (Object.keys(config).length) body.config = config;
  if (monitorForm.dataset.inlineAt !== undefined) return saveInline(monitorForm, body);
  // "A new policy that alerts" a channel: the monitor is checked first (a dry run), so a
  // form with mistakes makes no policy; then the policy is made and the monitor saved
  // with it.
  const newPolicy = typeof body.alertPolicyId === 'string' && body.alertPolicyId.startsWith('new:');
  if (newPolicy) {
    const channelId = body.alertPolicyId.slice(4);
    const option = monitorForm.querySelector(`option[value="new:${CSS.escape(channelId)}"]`);
    const dry = await send(monitorForm.dataset.method, `${monitorForm.dataset.path}?dryRun=true`, { ...body, alertPolicyId: null });
    if (!dry.ok) {
      const error = dry.json.error || {};
      if (error.details && error.details.length) return showErrors(error.details);
      return fail(error.message || `The server answered ${dry.status}`);
    }
    const made = await send('POST', '/v1/alert-policies', {
      name: `Alert ${option ? option.dataset.channelName : channelId}`.slice(0, 200),
      failureThreshold: 1,
      notifyOnRecovery: true,
      channels: [{ channelId }],
    });
    if (!made.ok) return fail((made.json.error && made.json.error.message) || `The server answered ${made.status}`);
    body.alertPolicyId = made.json.data.id;
  }
  const response = await fetch(monitorForm.dataset.path, {
    method: monitorForm.dataset.method,
    headers: { 'x-csrf-token': csrf, 'content-type': 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify(body),
  });
  const reply = await response.json().catch(() => ({}));
  if (response.ok) return location.assign(monitorForm.dataset.then.replace('{id}', reply.data.id));
  // The monitor was not saved after all: the policy made for it goes too.
  if (newPolicy) await send('DELETE', `/v1/alert-policies/${body.alertPolicyId}`);
  const error = reply.error || {};
  if (error.details && error.details.length) return showErrors(error.details);
  fail(error.message || `The server answered ${response.status}`);
});

// One of a policy's inline channels, edited on its own form: the policy's list is read
// again and sent back with this channel changed in place, only while the channel is still
// there as the page showed it (someone else's edit in between is not overwritten). Its
// secrets left empty are kept by the API.
function same(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => same(a[k], b[k]));
}
async function saveInline(form, body) {
  const at = Number(form.dataset.inlineAt);
  const now = await send('GET', form.dataset.path);
  if (!now.ok) return fail((now.json.error && now.json.error.message) || `The server answered ${now.status}`);
  const channels = now.json.data.channels;
  if (!same(channels[at], JSON.parse(form.dataset.was))) {
    return fail('This policy changed since the page was loaded: reload the page and edit again.');
  }
  channels[at] = { type: form.dataset.type, ...body };
  const reply = await send('PATCH', form.dataset.path, { channels });
  if (reply.ok) return location.assign(form.dataset.then);
  const error = reply.json.error || {};
  const prefix = `channels[${at}].`;
  const mine = (error.details || []).filter((d) => d.field.startsWith(prefix));
  if (mine.length) return showErrors(mine.map((d) => ({ ...d, field: d.field.slice(prefix.length) })));
  fail(error.message || `The server answered ${reply.status}`);
}

// Forms that send their fields as JSON (`data-json`), selects that PATCH one field
// (`data-patch`), and results shown once (`data-show`: a field of the answer, such as a
// new key's secret, shown in #result instead of reloading).
const result = document.getElementById('result');
function show(value) {
  result.textContent = Array.isArray(value) ? value.join('  ') : String(value);
  result.focus?.();
}
async function send(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: { 'x-csrf-token': csrf, 'content-type': 'application/json' },
    credentials: 'same-origin',
    body: method === 'GET' || body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json = {};
  try { json = text ? JSON.parse(text) : {}; } catch { json = {}; }
  return { ok: response.ok, json, status: response.status };
}
for (const form of document.querySelectorAll('form[data-json]')) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    let body = {};
    for (const el of form.elements) {
      if (el.dataset.array) {
        body[el.dataset.array] = body[el.dataset.array] || [];
        // `data-json`: the item is the JSON object in the value (a policy's inline channel).
        if (el.checked) body[el.dataset.array].push(el.dataset.json !== undefined ? JSON.parse(el.value) : el.dataset.itemKey ? { [el.dataset.itemKey]: el.value } : el.value);
        continue;
      }
      if (!el.name) continue;
      if (el.type === 'checkbox') body[el.name] = el.checked;
      else if (el.type === 'number') body[el.name] = el.value === '' ? undefined : Number(el.value);
      else body[el.name] = el.value.trim();
    }
    // `data-nest`: the fields are one object of the body; with nothing chosen, null (off).
    if (form.dataset.nest) {
      const empty = Object.values(body).every((v) => Array.isArray(v) && v.length === 0);
      body = { [form.dataset.nest]: empty ? null : body };
    }
    const reply = await send(form.dataset.method, form.dataset.path, body);
    if (!reply.ok) return fail((reply.json.error && reply.json.error.message) || `The server answered ${reply.status}`);
    if (form.dataset.show && reply.json.data) return show(reply.json.data[form.dataset.show]);
    if (form.dataset.then) return location.assign(form.dataset.then);
    location.reload();
  });
}
for (const select of document.querySelectorAll('select[data-patch]')) {
  select.addEventListener('change', async () => {
    const reply = await send('PATCH', select.dataset.patch, { [select.dataset.field]: select.value });
    if (!reply.ok) return fail((reply.json.error && reply.json.error.message) || `The server answered ${reply.status}`);
    notice.textContent = 'Saved.';
    notice.className = '';
  });
}
for (const button of document.querySelectorAll('button[data-show]')) {
  button.addEventListener('click', async (event) => {
    event.stopImmediatePropagation();
    if (button.dataset.confirm && !confirm(button.dataset.confirm)) return;
    const reply = await send(button.dataset.method, button.dataset.path);
    if (!reply.ok) return fail((reply.json.error && reply.json.error.message) || `The server answered ${reply.status}`);
    const value = reply.json.data[button.dataset.show];
    show(button.dataset.label ? `${button.dataset.label}: ${value}` : value);
  }, { capture: true });
}
document.getElementById('totp-enroll')?.addEventListener('click', async () => {
  const reply = await send('POST', '/v1/auth/totp/enroll', {});
  if (!reply.ok) return fail(reply.json.error.message);
  document.getElementById('totp-secret').textContent = reply.json.data.secret;
  // The QR code is an SVG document drawn by the server; shown as an image, not markup.
  const img = document.createElement('img');
  img.alt = 'QR code of the authenticator secret';
  img.src = 'data:image/svg+xml;base64,' + btoa(reply.json.data.qrSvg);
  document.getElementById('totp-qr').replaceChildren(img);
  document.getElementById('totp-setup').hidden = false;
});

// The maintenance form: one-off (start and end, read in the browser's time zone) or
// recurring (a cron schedule in a chosen time zone, each occurrence lasting some
// minutes). "Preview" asks the API for a dry run and lists the next occurrences, read in
// the window's time zone.
const maintenanceForm = document.getElementById('maintenance-form');
if (maintenanceForm) {
  const f = maintenanceForm.elements;
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  f.timezone.value = browserZone;
  const showKind = () => {
    for (const el of maintenanceForm.querySelectorAll('[data-for]')) el.hidden = el.dataset.for !== f.kind.value;
  };
  f.kind.addEventListener('change', showKind);
  showKind();
  const instant = (value) => (value ? new Date(value).toISOString() : undefined);
  const body = () => {
    const b = { name: f.name.value.trim() };
    if (f.description.value.trim()) b.description = f.description.value.trim();
    if (f.kind.value === 'once') {
      b.start = instant(f.start.value);
      b.end = instant(f.end.value);
    } else {
      b.start = instant(f.start.value) || new Date().toISOString();
      b.cron = f.cron.value.trim();
      b.durationMinutes = Number(f.duration.value);
      b.timezone = f.timezone.value.trim();
    }
    if (f.notice.value.trim() !== '') b.subscriberNoticeMinutes = Math.round(Number(f.notice.value) * 60);
    const ids = [...maintenanceForm.querySelectorAll('input[data-monitor]:checked')].map((i) => i.value);
    if (ids.length) b.monitorIds = ids;
    const tags = f.tags.value.split(',').map((t) => t.trim()).filter(Boolean);
    if (tags.length) b.tags = tags;
    return b;
  };
  const problem = (reply) => {
    const e = reply.json.error || {};
    const details = (e.details || []).map((d) => `${d.field} ${d.message}`).join('; ');
    return details || e.message || `The server answered ${reply.status}`;
  };
  const upcoming = document.getElementById('mw-upcoming');
  document.getElementById('mw-preview').addEventListener('click', async () => {
    const b = body();
    const reply = await send('POST', '/v1/maintenance-windows?dryRun=true', b);
    if (!reply.ok) return fail(problem(reply));
    const zone = b.timezone || browserZone;
    const when = (iso) => new Date(iso).toLocaleString(undefined, { timeZone: zone, weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
    const list = document.createElement('ol');
    for (const o of reply.json.data.upcoming || []) {
      const li = document.createElement('li');
      li.textContent = `${when(o.start)} to ${when(o.end)}`;
      list.append(li);
    }
    const title = document.createElement('p');
    title.textContent = list.children.length ? `Next occurrences (${zone}):` : 'No occurrence ahead.';
    upcoming.replaceChildren(title, list);
  });
  maintenanceForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    const reply = await send('POST', '/v1/maintenance-windows', body());
    if (!reply.ok) return fail(problem(reply));
    location.reload();
  });
}

// Choosing another type swaps the form for that type's without a page load, keeping what
// was typed in the fields every monitor or channel has.
const typePicker = document.getElementById('type-picker');
typePicker?.addEventListener('change', async () => {
  const url = `${typePicker.form.getAttribute('action')}?type=${encodeURIComponent(typePicker.value)}`;
  const response = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' } });
  if (!response.ok) return location.assign(url);
  const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').querySelector('form[data-plugin-form]');
  const current = document.querySelector('form[data-plugin-form]');
  if (!fresh || !current) return location.assign(url);
  for (const name of ['name', 'tags', 'interval', 'timeout', 'alertPolicyId']) {
    const was = current.querySelector(`[name="${name}"]`);
    const now = fresh.querySelector(`[name="${name}"]`);
    if (was && now) now.value = was.value;
  }
  current.replaceWith(fresh);
  history.replaceState(null, '', url);
  notice.textContent = `The form is now for the ${typePicker.value} type.`;
  notice.className = '';
});

// The Import page: the chosen file goes to POST /import as it is, with the session's CSRF
// token; the server's report (the plan, what could not come and why) is shown as text.
document.getElementById('import-form')?.addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const file = form.querySelector('#import-file').files[0];
  const status = document.getElementById('import-status');
  const result = document.getElementById('import-result');
  if (!file) return;
  const dryRun = event.submitter?.value === 'false' ? 'false' : 'true';
  const source = form.querySelector('#import-source').value;
  status.textContent = dryRun === 'true' ? 'Working out the plan…' : 'Importing…';
  const response = await fetch(
    `/import?source=${encodeURIComponent(source)}&dryRun=${dryRun}&withHistory=${form.querySelector('#import-history').checked}`,
    {
      method: 'POST',
      headers: { 'x-csrf-token': csrf, 'content-type': 'application/octet-stream' },
      credentials: 'same-origin',
      body: file,
    },
  );
  const text = await response.text();
  status.textContent = response.ok
    ? (dryRun === 'true' ? 'Preview: nothing was changed.' : 'Imported.')
    : `The import was refused (${response.status}).`;
  result.textContent = text;
  result.hidden = false;
  result.focus();
});
