// Sign-in pages: login, first owner's setup, invitation, password reset. They call the
// same API as every client (/v1/auth/*) and keep nothing but the session cookie.
'use strict';

const params = new URLSearchParams(location.search);
const token = params.get('token');
const message = document.getElementById('message');

function say(text, isError) {
  message.textContent = text;
  message.className = isError ? 'error' : '';
}

async function call(method, path, body, csrf) {
  const headers = { 'content-type': 'application/json' };
  if (csrf) headers['x-csrf-token'] = csrf;
  const response = await fetch(path, {
    method, headers, credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : {};
  return { status: response.status, json };
}

function errorOf(reply) {
  const e = reply.json.error || {};
  const details = (e.details || []).map((d) => `${d.field} ${d.message}`).join('; ');
  return details || e.message || `Request failed (${reply.status})`;
}

function show(id) {
  document.getElementById(id).hidden = false;
}

function fields(form) {
  return Object.fromEntries(new FormData(form).entries());
}

async function home() {
  const session = await call('GET', '/v1/auth/session');
  if (session.status === 200) {
    const d = session.json.data;
    document.getElementById('who').textContent = `${d.user.name} <${d.user.email}>`;
    document.getElementById('where').textContent = d.workspace ? d.workspace.name : 'no workspace';
    document.getElementById('role').textContent = d.workspace ? d.workspace.role : '-';
    document.getElementById('logout').addEventListener('click', async () => {
      await call('POST', '/v1/auth/logout', {}, d.csrfToken);
      location.reload();
    });
    show('signed-in');
    return;
  }
  const form = document.getElementById('login');
  show('login');
  const providers = await call('GET', '/v1/auth/providers');
  for (const p of (providers.json.data || [])) {
    const a = document.createElement('a');
    a.className = 'provider';
    a.href = p.startUrl;
    a.textContent = `Sign in with ${p.displayName}`;
    document.getElementById('providers').append(a);
  }
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const f = fields(form);
    const body = { email: f.email, password: f.password };
    if (f.code) body[/^\d[\d ]*$/.test(f.code) ? 'totpCode' : 'recoveryCode'] = f.code;
    const reply = await call('POST', '/v1/auth/login', body);
    if (reply.status === 200) return location.assign('/');
    if (reply.json.error && reply.json.error.code === 'TWO_FACTOR_REQUIRED') {
      show('login-2fa');
      document.getElementById('login-code').focus();
    }
    say(errorOf(reply), true);
  });
}

function submit(id, path, build, done) {
  const form = document.getElementById(id);
  show(id);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const reply = await call('POST', path, build(fields(form)));
    if (reply.status < 300) return done(reply);
    say(errorOf(reply), true);
  });
}

const page = location.pathname;
if (page === '/setup') {
  submit('setup', '/v1/auth/setup', (f) => ({ token, ...f }), () => location.assign('/'));
} else if (page === '/invite') {
  submit('invite', '/v1/auth/invitations/accept', (f) => {
    const body = { token };
    if (f.name) body.name = f.name;
    if (f.password) body.password = f.password;
    return body;
  }, (reply) => {
    if (reply.json.data.accountCreated) return location.assign('/');
    say('You joined the workspace. Sign in with your account.');
    document.getElementById('invite').hidden = true;
    home();
  });
} else if (page === '/reset-password' && token) {
  submit('reset', '/v1/auth/password-reset/confirm', (f) => ({ token, ...f }), () => {
    document.getElementById('reset').hidden = true;
    say('Your password is set. Sign in with it.');
    home();
  });
} else if (page === '/reset-password') {
  submit('reset-request', '/v1/auth/password-reset', (f) => f, (reply) => {
    document.getElementById('reset-request').hidden = true;
    say(reply.json.data.message);
  });
} else {
  home();
}
