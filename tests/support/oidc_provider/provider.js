// A real OpenID provider for Relata's tests: panva's oidc-provider (certified), started by
// tests/support/oidc.py on 127.0.0.1. Development interactions only: any login name signs
// in as the subject of that name (any password), then a consent form; both are plain HTML
// forms the tests post with httpx. Keys are generated at each start (RS256), so nothing
// secret is stored in the repository.
//
// Environment: OIDC_PORT, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URIS (comma-
// separated). An empty OIDC_CLIENT_SECRET registers a public client (PKCE only, no client
// authentication at the token endpoint). Prints "ready ISSUER" on standard output once it
// listens.
import { generateKeyPairSync } from "node:crypto";
import Provider from "oidc-provider";

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: "jwk" }), kid: "relata-test-1", use: "sig", alg: "RS256" };

const secret = process.env.OIDC_CLIENT_SECRET || "";
const client = {
  client_id: process.env.OIDC_CLIENT_ID,
  redirect_uris: process.env.OIDC_REDIRECT_URIS.split(","),
  grant_types: ["authorization_code"],
  response_types: ["code"],
  ...(secret
    ? { client_secret: secret, token_endpoint_auth_method: "client_secret_basic" }
    : { token_endpoint_auth_method: "none" }),
};

const provider = new Provider(issuer, {
  clients: [client],
  jwks: { keys: [signingKey] },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  claims: { openid: ["sub"], profile: ["name", "preferred_username"], email: ["email"] },
  // The profile claims go into the ID token itself (Relata reads no userinfo).
  conformIdTokenClaims: false,
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return { sub, name: `Test ${sub}`, preferred_username: sub, email: `${sub}@example.test` };
      },
    };
  },
});
provider.proxy = false;

const server = provider.listen(port, "127.0.0.1", () => {
  process.stdout.write(`ready ${issuer}\n`);
});

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
