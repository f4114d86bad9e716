// Measures the overview in headless Chromium: signs in, loads `/` several times and
// reports the median time to the response's end (server) and to DOM interactive
// (server plus browser), and the HTML's size. Prints one JSON line.
//
// node overview_speed.mjs <config.json>
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(config.modules + '/');
const { chromium } = require('playwright-core');

const browser = await chromium.launch({
  executablePath: config.chromium,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const context = await browser.newContext();
const page = await context.newPage();
await page.goto(config.base + '/');
const form = page.locator('#login');
await form.getByLabel('E-mail').fill(config.email);
await form.getByLabel('Password', { exact: true }).fill(config.password);
await form.getByRole('button', { name: 'Sign in' }).click();
await page.waitForSelector('h1:text("Monitors")');

const runs = [];
for (let i = 0; i < config.runs; i++) {
  await page.goto(config.base + '/', { waitUntil: 'load' });
  runs.push(await page.evaluate(() => {
    const n = performance.getEntriesByType('navigation')[0];
    return { server: n.responseEnd - n.requestStart, interactive: n.domInteractive - n.startTime, bytes: n.decodedBodySize };
  }));
}
await browser.close();
const median = (k) => runs.map((r) => r[k]).sort((a, b) => a - b)[Math.floor(runs.length / 2)];
console.log(JSON.stringify({ serverMs: median('server'), interactiveMs: median('interactive'), htmlBytes: median('bytes') }));
