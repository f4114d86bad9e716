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

document.getElementById('sign-out')?.addEventListener('click', async () => {
  await api('POST', '/v1/auth/logout');
  location.assign('/');
});

document.getElementById('workspace-switch')?.addEventListener('change', async (event) => {
  const error = await api('PATCH', '/v1/auth/session', { workspaceId: event.target.value });
  if (error) return fail(error);
  location.assign('/');
});

for (const button of document.querySelectorAll('button[data-method][data-path]')) {
  button.addEventListener('click', async () => {
    if (button.dataset.confirm && !confirm(button.dataset.confirm)) return;
    button.disabled = true;
    const error = await api(button.dataset.method, button.dataset.path);
    button.disabled = false;
    if (error) return fail(error);
    if (button.dataset.then) location.assign(button.dataset.then);
    else location.reload();
  });
}

// Acknowledge with a note.
document.getElementById('acknowledge')?.addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.target;
  const note = form.elements.note.value.trim();
  const error = await api('POST', form.dataset.path, note ? { note } : {});
  if (error) return fail(error);
  location.reload();
});

// Live states on the overview (server-sent events).
const table = document.getElementById('monitors');
if (table && table.dataset.live && window.EventSource) {
  const source = new EventSource(table.dataset.live);
  source.addEventListener('monitors', (event) => {
    const data = JSON.parse(event.data);
    for (const m of data.monitors) {
      const row = table.querySelector(`tr[data-id="${CSS.escape(m.id)}"]`);
      if (!row) continue;
      const state = row.querySelector('[data-field="state"]');
      state.textContent = m.state;
      state.className = `state ${m.state}`;
      row.querySelector('[data-field="response"]').textContent = m.response;
    }
    for (const [name, n] of Object.entries(data.counts)) {
      const cell = document.querySelector(`[data-count="${name}"]`);
      if (cell) cell.textContent = n;
    }
  });
}
