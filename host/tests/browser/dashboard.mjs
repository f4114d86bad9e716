// Drives the dashboard in headless Chromium with playwright-core: an owner signs in
// through the form, finds a monitor, pauses it from its page; a viewer sees no write
// controls and a write forged from the page is refused. Screenshots at desktop and phone
// width go to the artifact directory. Prints one JSON line of findings; exits 1 on a
// failed expectation.
//
// node dashboard.mjs <config.json>
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(config.modules + '/');
const { chromium } = require('playwright-core');

const failures = [];
const scanned = [];
const phoneWidths = {};
// Every page axe looked at, opened again at phone width.
const scannedUrls = new Set();

// The test flips the target between steps: it reads our `step:` lines on stdout and
// answers `go` on stdin.
const lines = [];
let waiting = null;
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  lines.push(...chunk.split('\n').filter(Boolean));
  if (waiting) { const w = waiting; waiting = null; w(); }
});
async function step(name) {
  console.log(`step: ${name}`);
  while (!lines.length) await new Promise((resolve) => { waiting = resolve; });
  lines.shift();
}
function expect(ok, what) {
  if (!ok) failures.push(what);
}

const browser = await chromium.launch({
  executablePath: config.chromium,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

async function scan(page, name) {
  await page.addScriptTag({ path: `${config.modules}/axe-core/axe.min.js` });
  const result = await page.evaluate(() => window.axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] }));
  scanned.push({ page: name, rulesPassed: result.passes.length });
  scannedUrls.add(page.url());
  for (const v of result.violations) {
    if (v.impact === 'serious' || v.impact === 'critical') {
      failures.push(`${name}: ${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
    }
  }
}

async function signIn(context, email, password) {
  const page = await context.newPage();
  await page.goto(config.base + '/');
  const form = page.locator('#login');
  await form.getByLabel('E-mail').fill(email);
  await form.getByLabel('Password', { exact: true }).fill(password);
  await form.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForSelector('h1:text("Monitors")');
  return page;
}

try {
  // The owner, keyboard included: search with the form, open the monitor, pause it.
  const desktop = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await signIn(desktop, config.owner.email, config.owner.password);
  await page.screenshot({ path: `${config.artifacts}/overview-desktop.png`, fullPage: true });
  await page.getByLabel('Name').focus();
  await page.keyboard.type(config.monitor);
  await page.keyboard.press('Enter');
  await page.waitForSelector('caption:text("1 monitor")');
  await page.getByRole('link', { name: config.monitor }).click();
  await page.waitForSelector(`h1:text("${config.monitor}")`);
  await page.screenshot({ path: `${config.artifacts}/monitor-desktop.png`, fullPage: true });
  await page.getByRole('button', { name: 'Pause' }).focus();
  await page.keyboard.press('Enter');
  await page.waitForSelector('button:text("Resume")');
  expect((await page.locator('dd .state').first().textContent()) === 'paused', 'the monitor reads paused');

  // Keyboard only: a new http monitor through its schema-generated form, then up.
  await page.goto(`${config.base}/monitors/new?type=http`);
  await page.locator('#f-name').focus();
  await page.keyboard.type('Keyboard API');
  await page.locator('#f-url').focus();
  await page.keyboard.type(config.targetOk);
  // Headers are rows of a name and a value: one filled, a second added and removed.
  await page.locator('#f-headers .pair-name').first().fill('X-Probe');
  await page.locator('#f-headers .pair-value').first().fill('tocsin');
  await page.locator('#f-headers').getByRole('button', { name: 'Add a row' }).click();
  expect(await page.locator('#f-headers .pair').count() === 2, 'a row is added');
  await page.locator('#f-headers .pair').last().getByRole('button', { name: 'Remove' }).click();
  expect(await page.locator('#f-headers .pair').count() === 1, 'a row is removed');
  await page.locator('#f-url').focus();
  // `method` is a select of the schema's choices, GET unless changed.
  expect(await page.locator('select#f-method').inputValue() === 'GET', 'the method defaults to GET');
  expect(await page.locator('select#f-method option[value=""]').count() === 0, 'the method offers no empty choice');
  expect((await page.locator('label[for="f-method"]').textContent()).trim() === 'Method', 'the method is labelled from its schema title');
  await page.keyboard.press('Enter');
  await page.waitForSelector('h1:text("Keyboard API")');
  for (let i = 0; i < 60; i++) {
    if (await page.locator('dd .state:text("up")').count()) break;
    await page.waitForTimeout(500);
    await page.reload();
  }
  expect(await page.locator('dd .state:text("up")').count() === 1, 'the keyboard-made monitor goes up');

  // JSON assertions are rows of a path, an operator and a value; edited, they come back
  // as rows.
  await page.goto(`${config.base}/monitors/new?type=http`);
  await page.locator('#f-name').fill('JSON API');
  await page.locator('#f-url').fill(config.targetOk);
  const cells = (row) => page.locator('#f-jsonAssertions .pair').nth(row).locator('[data-key]');
  await cells(0).nth(0).fill('$.status');
  await cells(0).nth(2).fill('ok');
  await page.locator('#f-jsonAssertions').getByRole('button', { name: 'Add a row' }).click();
  await cells(1).nth(0).fill('$.count');
  await page.locator('#f-jsonAssertions .pair').nth(1).locator('select').selectOption('gt');
  await cells(1).nth(2).fill('3');
  await page.getByRole('button', { name: 'Create monitor' }).click();
  await page.waitForSelector('h1:text("JSON API")');
  const jsonId = page.url().split('/monitors/')[1].split(/[/?#]/)[0];
  const stored = await page.evaluate(async (id) => (await (await fetch(`/v1/monitors/${id}`)).json()).data.jsonAssertions, jsonId);
  expect(JSON.stringify(stored) === JSON.stringify([{ path: '$.status', op: 'eq', value: 'ok' }, { path: '$.count', op: 'gt', value: 3 }]),
    `the assertions are stored as typed (${JSON.stringify(stored)})`);
  await page.goto(`${config.base}/monitors/${jsonId}/edit`);
  expect(await page.locator('#f-jsonAssertions .pair').count() === 3, 'two rows and a blank one');
  expect(await cells(1).nth(2).inputValue() === '3' && await cells(1).nth(1).inputValue() === 'gt', 'the second row comes back');

  // A third-party plugin's form, from its schema; the server's error shows by its field.
  // Chosen from the type picker without a page load, keeping the name already typed.
  await page.goto(`${config.base}/monitors/new?type=http`);
  await page.evaluate(() => { window.pickedInPlace = true; });
  await page.locator('#f-name').fill('Database port');
  await page.getByLabel('Type', { exact: true }).selectOption('tcp-port');
  await page.locator('#f-port').waitFor({ timeout: 10000 });
  expect(await page.evaluate(() => window.pickedInPlace === true), 'the type changed without a page load');
  expect(await page.locator('#f-name').inputValue() === 'Database port', 'the name typed is kept');
  expect(page.url().endsWith('/monitors/new?type=tcp-port'), 'the address follows the type');
  expect((await page.locator('#help-port').textContent()).includes('TCP port.'), 'the port field carries the schema\'s description');
  expect(await page.locator('#f-port').getAttribute('max') === '65535', 'the port field carries the schema\'s maximum');
  await page.locator('#f-host').fill('127.0.0.1');
  await page.locator('#f-port').fill('70000');
  await page.getByRole('button', { name: 'Create monitor' }).click();
  await page.locator('#error-port:not(:empty)').waitFor({ timeout: 10000 });
  expect((await page.locator('#f-port').getAttribute('aria-invalid')) === 'true', 'the port field is marked invalid');
  expect(await page.evaluate(() => document.activeElement.id) === 'f-port', 'focus moves to the invalid field');
  await page.screenshot({ path: `${config.artifacts}/form-error-desktop.png`, fullPage: true });
  await page.locator('#f-port').fill(String(config.targetPort));
  await page.getByRole('button', { name: 'Create monitor' }).click();
  await page.waitForSelector('h1:text("Database port")');

  // Live on every page: pages opened once (each marked, so a reload would show) follow
  // what happens elsewhere. A monitor created through the API appears on the overview;
  // checks append on a monitor's page.
  const unreloaded = async (p) => p.evaluate(() => window.stillTheSamePage === true);
  const mark = async (p) => p.evaluate(() => { window.stillTheSamePage = true; });
  const watcher = await desktop.newPage();
  await watcher.goto(`${config.base}/`);
  await mark(watcher);
  const allBefore = Number(await watcher.locator('.counts li').first().locator('strong').textContent());
  await step('create a monitor elsewhere');
  await watcher.locator('#monitors a:text("Made elsewhere")').waitFor({ timeout: 20000 });
  const allAfter = Number(await watcher.locator('.counts li').first().locator('strong').textContent());
  expect(allAfter === allBefore + 1, `"All" counts the new monitor (${allBefore} then ${allAfter})`);
  expect(await unreloaded(watcher), 'the overview showed the new monitor without a reload');
  await watcher.goto(`${config.base}/monitors/${config.liveId}`);
  await mark(watcher);
  const firstCheck = await watcher.locator('table time').first().getAttribute('datetime');
  await watcher.waitForFunction((first) => {
    const t = document.querySelector('table time');
    return t && t.getAttribute('datetime') !== first;
  }, firstCheck, { timeout: 20000 });
  expect(await unreloaded(watcher), 'a new check appeared on the monitor page without a reload');

  // The live monitor: up, then down without a reload (and its incident appears on an
  // open incidents page), then its incident acknowledged with a note, then resolved when
  // the target recovers, seen on the open incident page.
  await page.goto(`${config.base}/?q=${encodeURIComponent(config.live)}`);
  const cell = page.locator(`tr[data-id="${config.liveId}"] [data-field="state"]`);
  await cell.filter({ hasText: 'up' }).waitFor({ timeout: 30000 });
  await watcher.goto(`${config.base}/incidents`);
  await mark(watcher);
  await step('fail the target');
  await cell.filter({ hasText: 'down' }).waitFor({ timeout: 30000 });
  await watcher.locator(`a:text("${config.live}")`).first().waitFor({ timeout: 20000 });
  expect(await unreloaded(watcher), 'the new incident appeared on the incidents page without a reload');
  await page.getByRole('link', { name: 'Incidents' }).click();
  await page.getByRole('link', { name: config.live }).first().click();
  await page.getByLabel('Note (optional)').fill('Looking into it');
  await page.getByRole('button', { name: 'Acknowledge' }).click();
  await page.waitForSelector('dd .state:text("acknowledged")');
  expect(await page.getByText('note: Looking into it').count() === 1, 'the note is on the timeline');
  expect(await page.locator('dd:text-matches("so far$")').count() === 1, 'an open incident shows how long it has lasted');
  expect(await page.locator('table td[data-label="Result"] .state.down').count() >= 1, 'the incident page lists the failing checks');
  await mark(page);
  await step('recover the target');
  await page.locator('dd .state:text("resolved")').waitFor({ timeout: 30000 });
  expect(await unreloaded(page), 'the incident page showed the resolution without a reload');
  expect(await page.locator('dt:text("Resolved")').count() === 1, 'a resolved incident shows when');
  expect(await page.locator('dd:text-matches("so far$")').count() === 0, 'a resolved incident has a fixed duration');
  await watcher.close();

  // A heartbeat monitor's page tells how to call it; its shell line, run as a job would
  // run it, turns the open page up without a reload.
  await page.goto(`${config.base}/monitors/${config.heartbeatId}`);
  await mark(page);
  expect((await page.locator('dd .state').first().textContent()) === 'pending', 'a new heartbeat monitor waits for its first ping');
  expect((await page.locator('dd:text("never")').count()) === 1, 'no ping yet');
  const line = await page.locator('#ping-curl').inputValue();
  expect(line.startsWith('curl ') && line.includes(`${config.base}/ping/`), `the shell line calls the ping URL (${line})`);
  expect((await page.locator('#ping-cron').inputValue()).startsWith('* * * * * '), 'the crontab line runs every minute, as the period says');
  await page.getByRole('button', { name: 'Copy' }).first().click();
  await page.locator('#notice:text("Copied.")').waitFor({ timeout: 5000 });
  execFileSync('sh', ['-c', line], { timeout: 20000 });
  await page.locator('dd .state:text("up")').waitFor({ timeout: 20000 });
  expect(await unreloaded(page), 'the ping turned the page up without a reload');
  await page.screenshot({ path: `${config.artifacts}/heartbeat-desktop.png`, fullPage: true });

  // A public badge, made from the monitor's page: the images load, the Markdown is there.
  await page.goto(`${config.base}/monitors/${config.liveId}`);
  await page.getByRole('button', { name: 'Make a public badge' }).click();
  await page.locator('img[alt="Status badge"]').waitFor({ timeout: 10000 });
  expect(await page.locator('.badges img').evaluateAll((imgs) => imgs.every((i) => i.complete && i.naturalWidth > 40)), 'the badges load');
  expect((await page.locator('#badge-markdown').inputValue()).includes('/badge/'), 'the badge Markdown is shown');

  // At a glance: the monitor's heartbeat bar holds its last checks, the failures among
  // them, and the chart draws real points from the first minutes (before a second quarter
  // hour is aggregated).
  await page.goto(`${config.base}/monitors/${config.liveId}`);
  const beats = page.locator('ol.beats li.beat');
  const beatCount = await beats.count();
  expect(beatCount >= 5, `the heartbeat bar shows the last checks (${beatCount})`);
  expect(await page.locator('ol.beats li.beat.down').count() >= 1, 'the failed checks are in the bar');
  expect(await page.locator('ol.beats li.beat.up').count() >= 1, 'the passing checks are in the bar');
  // Found, focused and read in one task of the page: the bar is live (a check a second)
  // and redrawn as beats arrive, so an element found by an earlier step may already be
  // detached (a detached element has no computed style at all).
  const tip = await page.evaluate(() => {
    const el = [...document.querySelectorAll('ol.beats li.beat')].at(-1);
    el.focus();
    return getComputedStyle(el, '::after').content;
  });
  expect(/ago, (\d+ ms|no response), /.test(tip), `a focused check shows its time, response and result (${tip})`);
  const drawn = await page.locator('svg.chart circle, svg.chart polyline').count();
  expect(drawn >= 1, 'the response-time chart draws the first checks');
  expect(await page.getByText('No timed check in this range').count() === 0, 'the chart is not empty');
  expect(await page.locator('svg.chart rect.band-down').count() >= 1, 'the incident is shaded on the chart');
  expect(await page.locator('svg.chart line.ref').count() === 2, 'the chart marks its median and 95th percentile');
  expect(/^median \d+ ms$/.test(await page.locator('svg.chart text:text-matches("^median")').textContent()), 'the median is labelled');
  expect(await page.locator('svg.chart text[y="168"]').count() === 3, 'the time axis is labelled');

  // Accessibility: axe-core on every page finds no serious or critical violation. (This
  // context bypasses the pages' CSP to inject axe; the CSP itself is tested elsewhere.)
  const auditContext = await browser.newContext({ bypassCSP: true });
  const stranger = await auditContext.newPage();
  await stranger.goto(config.base + '/');
  await scan(stranger, 'sign-in');
  const audit = await signIn(auditContext, config.owner.email, config.owner.password);
  await scan(audit, 'overview');
  await audit.goto(`${config.base}/monitors/${config.liveId}`);
  await scan(audit, 'monitor');
  await audit.goto(`${config.base}/monitors/${config.heartbeatId}`);
  await scan(audit, 'heartbeat monitor');
  await audit.goto(`${config.base}/incidents?state=resolved`);
  await scan(audit, 'incidents');
  await audit.getByRole('link', { name: config.live }).first().click();
  await scan(audit, 'incident');
  for (const section of ['', '/members', '/keys', '/you', '/plugins', '/audit']) {
    await audit.goto(`${config.base}/settings${section}`);
    await scan(audit, `settings${section}`);
  }
  await audit.goto(`${config.base}/monitors/new?type=tcp-port`);
  await scan(audit, 'monitor form');

  // Alerting: a webhook channel from its schema-generated form, a policy using it, and
  // the test button with the delivery's result.
  await page.goto(`${config.base}/alerting/channels/new?type=webhook`);
  await page.locator('#f-name').fill('Ops hook');
  await page.locator('#f-url').fill(config.hook);
  await page.getByRole('button', { name: 'Create channel' }).click();
  await page.waitForSelector('h1:text("Alerting")');
  await page.locator('#p-name').fill('Production');
  await page.getByLabel('Ops hook').check();
  await page.getByRole('button', { name: 'Create policy' }).click();
  await page.waitForSelector('td:text("Production")');
  await page.getByRole('button', { name: 'Send a test' }).click();
  await page.locator('#result:text-matches("succeeded")').waitFor({ timeout: 20000 });
  // The test's delivery, with its attempt.
  await page.reload();
  await page.locator('a[href^="/alerting/deliveries/"]').first().click();
  await page.waitForSelector('td .state:text("delivered")');
  // Beside its attempts, the payload the channel was given.
  const payload = await page.locator('pre.payload').textContent();
  expect(JSON.parse(payload).test === true, `the delivery shows its payload: ${payload}`);
  await audit.goto(page.url());
  await scan(audit, 'delivery');
  await page.goto(`${config.base}/alerting`);
  // Both edited from their forms.
  await page.locator('a[href*="/alerting/channels/"][href$="/edit"]').click();
  await page.locator('#f-name').fill('Ops hook (renamed)');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('td:text("Ops hook (renamed)")');
  await page.locator('tr', { hasText: 'Production' }).locator('a[href$="/edit"]').click();
  await page.locator('#p-failure').fill('3');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('td:text("3 failures")');
  // A channel defined on a policy, edited from the policy's form: its bot token is not
  // shown and is kept; a mistake is shown beside its field.
  await page.locator('tr', { hasText: 'Pager' }).locator('a[href$="/edit"]').click();
  await page.getByRole('link', { name: 'Edit settings of telegram: 42' }).click();
  await page.waitForSelector('#f-chatId');
  expect(await page.locator('#f-chatId').inputValue() === '42', 'the inline channel\'s chat id is on its form');
  expect(await page.locator('#f-botToken').inputValue() === '', 'the bot token is not shown');
  expect((await page.locator('#f-botToken').getAttribute('placeholder')).startsWith('set, unchanged'), 'the bot token is marked as kept');
  await audit.goto(page.url());
  await scan(audit, 'inline channel');
  await page.locator('#f-botToken').fill('no-colon');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.locator('#error-botToken:text-matches("bot token")').waitFor();
  await page.locator('#f-botToken').fill('');
  await page.locator('#f-chatId').fill('43');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('label:text("telegram: 43")');
  await audit.goto(`${config.base}/alerting`);
  await scan(audit, 'alerting');

  // The monitor form chooses the alert policy; the monitor page names it, and snoozes.
  await page.goto(`${config.base}/monitors/${config.liveId}/edit`);
  await page.getByLabel('Alert policy').selectOption({ label: 'Production' });
  await page.locator('#f-dependsOn').getByLabel('Checkout API', { exact: true }).check();
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('dd a:text("Production")');
  expect(await page.locator('dt:text("Depends on") + dd a:text("Checkout API")').count() === 1, 'the dependency chosen on the form is named on the page');
  await page.getByRole('button', { name: 'Snooze 1 h' }).click();
  await page.waitForSelector('dd:text-matches("snoozed until")');
  await page.getByRole('button', { name: 'Unsnooze' }).click();
  await page.waitForSelector('button:text("Snooze 8 h")');
  // A new policy alerting a channel, made in the same step as the monitor's edit.
  await page.goto(`${config.base}/monitors/${config.liveId}/edit`);
  await page.getByLabel('Alert policy').selectOption({ label: 'Ops hook (renamed) (new policy)' });
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('dd a:text("Alert Ops hook (renamed)")');
  await page.goto(`${config.base}/monitors/${config.liveId}/edit`);
  await page.getByLabel('Alert policy').selectOption({ label: 'None (nobody is told)' });
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('dd:text("none (nobody is told)")');

  // A status page of two monitors, opened as visitors see it.
  await page.goto(`${config.base}/status-pages`);
  await page.locator('#sp-name').fill('Shop status');
  await page.locator('#sp-slug').fill('shop');
  await page.getByLabel(config.live, { exact: true }).check();
  await page.getByLabel('Keyboard API', { exact: true }).check();
  await page.getByRole('button', { name: 'Create status page' }).click();
  await page.getByRole('link', { name: '/status/shop' }).click();
  await page.waitForSelector(`text=${config.live}`);
  await audit.goto(`${config.base}/status-pages`);
  await scan(audit, 'status pages');

  // The status page edited from its own page: renamed, one monitor fewer, an update
  // posted (visitors read it), then deleted.
  await page.goto(`${config.base}/status-pages`);
  await page.getByRole('link', { name: 'Shop status' }).click();
  await page.locator('#sp-name').fill('Shop status (edited)');
  await page.getByLabel('Keyboard API', { exact: true }).uncheck();
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('h1:text("Shop status (edited)")');
  expect(!(await page.getByLabel('Keyboard API', { exact: true }).isChecked()), 'the monitor taken off stays off');
  await page.getByLabel('Status', { exact: true }).selectOption('identified');
  await page.getByLabel('What visitors read').fill('Payments are slow; a fix is rolling out.');
  await page.getByRole('button', { name: 'Post update' }).click();
  await page.waitForSelector('td:text("Payments are slow; a fix is rolling out.")');
  await audit.goto(page.url());
  await scan(audit, 'status page');
  const visitor = await browser.newPage();
  await visitor.goto(`${config.base}/status/shop`);
  expect(await visitor.getByText('Payments are slow; a fix is rolling out.').count() >= 1, 'visitors read the update');
  await visitor.close();
  // Corrected in place: the row's Edit opens its own form with the text to change.
  await page.locator('details.edit-update summary').click();
  await page.locator('details.edit-update select').selectOption('monitoring');
  await page.locator('details.edit-update textarea').fill('Payments are back; we are watching them.');
  await page.getByRole('button', { name: 'Save update' }).click();
  await page.waitForSelector('td[data-label="Text"]:text("Payments are back; we are watching them.")');
  expect(await page.locator('td[data-label="Status"]:text("monitoring")').count() === 1, 'the status changed');
  expect(await page.locator('td[data-label="Posted"] .help:text("edited")').count() === 1, 'the row says it was edited');
  await audit.goto(page.url());
  await audit.locator('details.edit-update summary').click();
  await scan(audit, 'status page, an update being edited');
  const reader = await browser.newPage();
  await reader.goto(`${config.base}/status/shop`);
  expect(await reader.getByText('Payments are back; we are watching them.').count() >= 1, 'visitors read the corrected update');
  expect(await reader.getByText('Payments are slow; a fix is rolling out.').count() === 0, 'and not the first text');
  await reader.close();
  page.once('dialog', (d) => d.accept());
  await page.locator('td[data-label="Text"]:text("Payments are back; we are watching them.") ~ td button:text("Delete")').click();
  await page.waitForSelector('text=No update posted.');

  // Settings, a section at a time: a new API key's secret is shown once; the QR code for
  // two-factor appears; the audit log names and links what changed.
  // The monthly report: a channel ticked and saved, then unticked (no report), then
  // ticked again; each reload shows what the server kept.
  await page.goto(`${config.base}/settings`);
  const monthly = page.getByLabel('Ops hook (renamed) (webhook)');
  for (const on of [true, false, true]) {
    await monthly.setChecked(on);
    // The form reloads the page once the server kept the change.
    const reloaded = page.waitForEvent('load');
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/v1/workspace') && r.request().method() === 'PATCH'),
      page.locator('form[data-nest="monthlyReport"] button[type="submit"]').click(),
    ]);
    expect(answer.ok(), `saving the monthly report answered ${answer.status()}`);
    await reloaded;
    expect(await monthly.isChecked() === on, `the monthly report's channel is ${on ? 'on' : 'off'} after saving`);
  }
  await page.goto(`${config.base}/settings`);
  await page.getByRole('link', { name: 'API keys' }).click();
  await page.waitForURL(`${config.base}/settings/keys`);
  await page.getByLabel('Name', { exact: true }).last().fill('deploy bot');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.locator('#result:text-matches("tcs_")').waitFor({ timeout: 10000 });
  await page.goto(`${config.base}/settings/audit`);
  expect(await page.locator(`td[data-label="Resource"] a[href="/monitors/${config.liveId}"]`).first().textContent() === config.live, 'the audit log names the monitor and links to it');
  await page.goto(`${config.base}/settings/you`);
  await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
  await page.locator('#totp-qr img').waitFor({ timeout: 10000 });
  expect(await page.locator('#totp-qr img').evaluate((img) => img.naturalWidth > 0), 'the QR code renders');

  // Maintenance planned from the dashboard: a weekly window previewed in its own time
  // zone, saved, read back in the list, then deleted.
  await page.goto(`${config.base}/maintenance`);
  await page.locator('#mw-name').fill('Database upgrades');
  await page.getByLabel('Happens').selectOption('recurring');
  await page.locator('#mw-cron').fill('0 2 * * 0');
  await page.locator('#mw-duration').fill('90');
  await page.locator('#mw-timezone').fill('Europe/Paris');
  await page.getByLabel('Keyboard API', { exact: true }).check();
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.locator('#mw-upcoming li').first().waitFor({ timeout: 10000 });
  const previewed = await page.locator('#mw-upcoming li').allTextContents();
  expect(previewed.length === 5 && previewed.every((t) => t.startsWith('Sun') && t.includes('02:00') && t.includes('03:30')), `the preview lists Sundays 02:00 to 03:30 in Paris (${previewed})`);
  await page.getByRole('button', { name: 'Plan maintenance' }).click();
  await page.waitForSelector('td:text("Database upgrades")');
  expect((await page.locator('td[data-label="Schedule"]').first().textContent()).includes('cron 0 2 * * 0, 90 min each, Europe/Paris'), 'the schedule reads back');
  expect((await page.locator('td[data-label="Covers"]').first().textContent()).trim() === 'Keyboard API', 'the covered monitor is named');
  expect(/^next: Sun .* 02:00 to Sun .* 03:30/.test((await page.locator('td[data-label="When"] .state').first().textContent()).trim()), 'the next occurrence is in the window\'s zone');
  await audit.goto(`${config.base}/maintenance`);
  await scan(audit, 'maintenance');
  page.once('dialog', (d) => d.accept());
  await page.locator('td:text("Database upgrades") ~ td button:text("Delete")').click();
  await page.waitForSelector('text=No maintenance planned.');

  // A phone-sized look at the overview.
  const phone = await browser.newContext({ viewport: { width: 360, height: 740 } });
  const small = await signIn(phone, config.owner.email, config.owner.password);
  await small.screenshot({ path: `${config.artifacts}/overview-phone.png`, fullPage: true });
  const width = await small.evaluate(() => document.documentElement.scrollWidth);
  expect(width <= 360, `the overview fits 360 px (scrollWidth ${width})`);
  await small.goto(`${config.base}/monitors/${config.liveId}`);
  await small.screenshot({ path: `${config.artifacts}/monitor-phone.png`, fullPage: true });
  await small.goto(`${config.base}/monitors/new?type=http`);
  await small.screenshot({ path: `${config.artifacts}/form-phone.png`, fullPage: true });
  // Every page fits a phone without scrolling sideways (tables read as cards); each main
  // page is photographed at phone and desktop width for the documentation.
  const pages = {
    overview: '/',
    monitor: `/monitors/${config.liveId}`,
    heartbeat: `/monitors/${config.heartbeatId}`,
    incidents: '/incidents?state=resolved',
    alerting: '/alerting',
    maintenance: '/maintenance',
    'status-pages': '/status-pages',
    settings: '/settings',
    form: '/monitors/new?type=http',
  };
  // And every other page looked at in this run (a form, a delivery, an incident, a
  // settings section, a policy's channel...) fits as well.
  for (const url of scannedUrls) {
    const path = url.slice(config.base.length);
    if (Object.values(pages).includes(path)) continue;
    await small.goto(url);
    phoneWidths[path] = await small.evaluate(() => document.documentElement.scrollWidth);
    expect(phoneWidths[path] <= 360, `${path} fits 360 px (scrollWidth ${phoneWidths[path]})`);
  }
  // The navigation folds under a Menu button on a phone, and opens from it.
  await small.goto(`${config.base}/incidents`);
  const incidentsLink = small.locator('#main-nav a[href="/incidents"]');
  expect(!(await incidentsLink.isVisible()), 'the navigation is folded on a phone');
  await small.getByRole('button', { name: 'Menu' }).click();
  expect(await incidentsLink.isVisible(), 'the Menu button opens the navigation');
  expect(await small.locator('#menu').getAttribute('aria-expanded') === 'true', 'the Menu button says it is open');
  expect(await small.locator('#sign-out').isVisible(), 'signing out is reachable from the menu');
  expect(!(await page.locator('#menu').isVisible()), 'no Menu button on a desktop');
  for (const [name, path] of Object.entries(pages)) {
    await small.goto(`${config.base}${path}`);
    phoneWidths[path] = await small.evaluate(() => document.documentElement.scrollWidth);
    expect(phoneWidths[path] <= 360, `${path} fits 360 px (scrollWidth ${phoneWidths[path]})`);
    await small.screenshot({ path: `${config.artifacts}/dashboard-${name}-phone.png` });
    await page.goto(`${config.base}${path}`);
    await page.screenshot({ path: `${config.artifacts}/dashboard-${name}-desktop.png` });
  }

  // The theme switch: dark chosen in a light system, kept across pages, and as clean.
  const switched = await auditContext.newPage();
  await switched.goto(`${config.base}/`);
  await switched.getByLabel('Theme').selectOption('dark');
  await switched.goto(`${config.base}/incidents?state=resolved`);
  const background = await switched.evaluate(() => getComputedStyle(document.body).backgroundColor);
  expect(background === 'rgb(18, 21, 28)', `the dark theme chosen stays on the next page (${background})`);
  await scan(switched, 'incidents (dark, chosen)');
  await switched.getByLabel('Theme').selectOption('');

  // The dark theme (following the system) passes the same contrast checks.
  const darkContext = await browser.newContext({ bypassCSP: true, colorScheme: 'dark' });
  const dark = await signIn(darkContext, config.owner.email, config.owner.password);
  await scan(dark, 'overview (dark)');
  await dark.goto(`${config.base}/monitors/${config.liveId}`);
  await scan(dark, 'monitor (dark)');

  // The viewer: no write controls, and a forged write is refused by the server.
  const viewerContext = await browser.newContext();
  const viewer = await signIn(viewerContext, config.viewer.email, config.viewer.password);
  await viewer.goto(`${config.base}/monitors/${config.monitorId}`);
  expect(await viewer.getByRole('button', { name: 'Resume' }).count() === 0, 'a viewer sees no Resume button');
  expect(await viewer.getByRole('button', { name: 'Delete' }).count() === 0, 'a viewer sees no Delete button');
  const forged = await viewer.evaluate(async (id) => {
    const csrf = document.querySelector('meta[name="csrf-token"]').content;
    const r = await fetch(`/v1/monitors/${id}/resume`, { method: 'POST', headers: { 'x-csrf-token': csrf } });
    return r.status;
  }, config.monitorId);
  expect(forged === 403, `a forged write answers 403 (got ${forged})`);
  await viewer.goto(`${config.base}/settings`);
  expect(await viewer.getByRole('link', { name: 'API keys' }).count() === 0, 'a viewer is offered no keys section');
  expect(await viewer.getByRole('link', { name: 'Audit log' }).count() === 0, 'a viewer is offered no audit log');
  const refused = await viewer.goto(`${config.base}/settings/audit`);
  expect(refused.status() === 404, `a viewer cannot open the audit log (${refused.status()})`);
  await viewer.goto(`${config.base}/settings/you`);
  expect(await viewer.getByRole('heading', { name: 'Sessions' }).count() === 1, 'a viewer sees their sessions');
} catch (e) {
  failures.push(String(e && e.stack || e));
} finally {
  await browser.close();
}

console.log(JSON.stringify({ failures, scanned, phoneWidths }));
process.exit(failures.length ? 1 : 0);
