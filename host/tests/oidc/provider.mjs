// A real OpenID Provider (the certified `oidc-provider` package) for the single sign-on
// test: one confidential client, people read from a JSON file at every sign-in (so a test
// can change someone's groups), the development login and consent pages.
//
// node provider.mjs <port> <redirect_uri> <users.json>
import Provider from 'oidc-provider';
import { readFileSync } from 'node:fs';

const [port, redirect, usersFile] = process.argv.slice(2);
const users = () => JSON.parse(readFileSync(usersFile, 'utf8'));

const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [{
    client_id: 'tocsin',
    client_secret: 'tocsin-client-secret',
    redirect_uris: [redirect],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  // Put the requested claims in the ID token (the relying party reads them there).
  conformIdTokenClaims: false,
  cookies: { keys: ['tocsin-test-cookie-key'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const user = users()[id];
    if (!user) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email_verified: true, ...user };
      },
    };
  },
});

provider.listen(Number(port), '127.0.0.1', () => console.log('ready'));
