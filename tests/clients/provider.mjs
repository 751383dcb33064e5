// An OpenID provider on loopback standing in for the stack's Cognito user
// pool: oidc-provider (OpenID Certified), with one confidential client, the
// authorization server's (client_secret_basic, PKCE S256 required, one
// redirect URI), and its development sign-in pages, where any login and
// password sign in as that login. Cognito itself cannot be reached here.
//
//   node tests/clients/provider.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI
//
// Prints `provider ready at ISSUER` once it listens.
import Provider from "oidc-provider";

const [port, clientId, clientSecret, redirectUri] = process.argv.slice(2);
if (!redirectUri) {
  console.error("usage: node provider.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI");
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  // Throwaway: a test provider's cookies, signed with a key made here.
  cookies: { keys: [crypto.randomUUID()] },
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
});
provider.listen(Number(port), "127.0.0.1", () => console.log(`provider ready at ${issuer}`));
