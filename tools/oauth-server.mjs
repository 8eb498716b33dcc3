// A real OAuth 2 authorization server on loopback for the authorization
// tests: oauth2-mock-server (pinned in package.json) issues RS256 access
// tokens from its token endpoint and publishes its keys at /jwks and its
// metadata at /.well-known/openid-configuration, the way a third-party
// issuer would. internal/testenv/oauthmock starts it; it runs on the Node 22 that
// package.json pins (node_modules/.bin/node).
//
//   node oauth-server.mjs [--port N] [--state FILE]
//
// --port 0 (the default) lets the system choose. --state keeps the keys in
// FILE (created when missing), so that a restarted server on the same port
// is the same issuer. When it listens it prints one JSON line to stdout:
// {"issuer": "...", "port": N, "kid": "..."}.
//
// Tokens are shaped as RFC 9068 access tokens for RFC 8707 resource
// indicators: typ at+jwt; aud is the token request's resource parameter
// (no aud when there is none); scope is the requested scope; for the
// client_credentials grant sub and client_id are the client's id; jti is
// fresh. A token request may carry mock_variant, a test knob that makes
// the token wrong in one way, still signed for real:
//
//   expired        exp half an hour ago
//   not-yet-valid  nbf half an hour ahead
//   other-issuer   iss is another issuer (this one's URL + "/other")
//   no-sub         no sub claim
//   bad-signature  the published kid, signed with a key that is not published
//   unknown-kid    signed with a key that is not published, under its own kid
//   alg-none       alg none, no signature (RFC 7519 unsecured JWT)
//   hs256-pubkey   HS256 with the published RSA public key (PEM) as the secret
//
// The authorization code grant (RFC 6749 4.1, PKCE RFC 7636) works as a
// provider's does, with the user approving at once: /authorize redirects
// to the redirect_uri with a code, and the token request must present
// that code's client_id and redirect_uri, and a code_verifier exactly
// when the authorization request had a code_challenge, one that derives
// it (S256: base64url(SHA-256(verifier)); plain: the verifier itself),
// else 400 invalid_grant. A code serves one token request: used again,
// 400 invalid_grant. The token's scope is the authorization request's;
// its sub is "user-1".
//
//   --client-id ID   the only client /authorize knows (others are refused
//                    with error=unauthorized_client), as at a provider
//                    where clients are registered by hand
//   --redirect-uri U with --client-id, repeatable: the client's registered
//                    callbacks, the only redirect_uri /authorize accepts,
//                    compared as strings, exactly (Amazon Cognito's rule,
//                    and Entra ID's for web and SPA redirect URIs). Any
//                    other is answered 400 redirect_mismatch, with no
//                    Location: a provider never sends the user, nor an
//                    error, to a callback nobody registered. Without it,
//                    any redirect_uri goes for the known client.
//   --profile P      how access tokens are shaped: "plain" (the default:
//                    aud is the token request's resource), "cognito"
//                    (Amazon Cognito's: no aud, client_id and token_use
//                    claims), "entra" (Entra ID v2.0's: aud is --audience,
//                    the app registration's id; scp lists the scopes
//                    without the --app-id-uri prefix; azp the client; and
//                    an authorization request whose resource is not the
//                    prefix of its scopes is refused, AADSTS9010010)
//   --registration   dynamic client registration (RFC 7591): POST /register
//                    issues a fresh public client id for the redirect URIs
//                    given, the metadata names it registration_endpoint,
//                    and /authorize knows only the clients registered so
//   --audience A     with --profile entra: the aud of every token
//   --app-id-uri U   with --profile entra: the API's Application ID URI
//   --refuse-resource
//                    with --profile entra: any resource parameter is
//                    refused, as by a tenant whose Application ID URI is
//                    api://<app id> and not the resource the client names
//                    (an MCP endpoint's URL): /authorize redirects with
//                    error=invalid_target (AADSTS9010010), /token answers
//                    400 invalid_target
//
// Control endpoints for the tests (not part of OAuth):
//
//   GET  /_mock/stats            requests served, by endpoint
//   POST /_mock/rotate           a new signing key, published next to the old
//   POST /_mock/outage?on=1|0    /jwks and the metadata answer 503 while on

import { createHash, createHmac, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, sign } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { Readable } from "node:stream";
import { Events, OAuth2Issuer, OAuth2Service } from "oauth2-mock-server";

const args = process.argv.slice(2);
function flag(name, def) {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : def;
}
// Every value of a repeatable flag, in order.
function flags(name) {
  const out = [];
  for (let i = 0; i + 1 < args.length; i++) if (args[i] === name) out.push(args[++i]);
  return out;
}
const port = Number(flag("--port", "0"));
const stateFile = flag("--state", "");
const onlyClient = flag("--client-id", "");
const registration = args.includes("--registration");
// Clients registered through /register, by id: their redirect URIs.
const registered = new Map();
const profile = flag("--profile", "plain");
const entraAudience = flag("--audience", "");
const appIDURI = flag("--app-id-uri", "");
// The known client's registered callbacks; empty: any.
const redirectURIs = flags("--redirect-uri");
const refuseResource = args.includes("--refuse-resource");
if (!["plain", "cognito", "entra"].includes(profile)) {
  console.error(`oauth-server: unknown --profile ${profile}`);
  process.exit(2);
}
if (redirectURIs.length > 0 && !onlyClient) {
  console.error("oauth-server: --redirect-uri registers the callbacks of --client-id's client, and there is none");
  process.exit(2);
}
if (refuseResource && profile !== "entra") {
  console.error("oauth-server: --refuse-resource is an Entra tenant's refusal; it needs --profile entra");
  process.exit(2);
}
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`oauth-server: bad --port ${flag("--port")}`);
  process.exit(2);
}

// Keys: the published signing key(s) and one key that is never published.
function newKey(kid) {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...privateKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" };
}
let state;
if (stateFile && existsSync(stateFile)) {
  state = JSON.parse(readFileSync(stateFile, "utf8"));
} else {
  state = { published: [newKey(`k1-${randomUUID().slice(0, 8)}`)], unpublished: newKey(`x-${randomUUID().slice(0, 8)}`) };
  if (stateFile) writeFileSync(stateFile, JSON.stringify(state), { mode: 0o600 });
}

const issuer = new OAuth2Issuer();
for (const k of state.published) await issuer.keys.add(k);
// The key tokens are signed with: the newest published key. The library
// picks keys round-robin when none is named; name ours.
let signingKid = state.published[state.published.length - 1].kid;
const pick = issuer.keys.get.bind(issuer.keys);
issuer.keys.get = (kid) => pick(kid ?? signingKid);

const service = new OAuth2Service(issuer);
const b64url = (v) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
const now = () => Math.floor(Date.now() / 1000);

// The client's id: HTTP Basic (form-encoded per RFC 6749 2.3.1) or the body.
function clientID(req) {
  const m = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? "");
  if (m) {
    const user = Buffer.from(m[1], "base64").toString("utf8");
    const i = user.indexOf(":");
    return decodeURIComponent((i >= 0 ? user.slice(0, i) : user).replace(/\+/g, " "));
  }
  return typeof req.body?.client_id === "string" ? req.body.client_id : undefined;
}

// The error_description of an Entra tenant that refuses a resource.
const aadsts9010010 = "AADSTS9010010: The resource parameter provided in the request doesn't match with the requested scopes.";

// Why an authorization request may not be answered with a redirect at
// all, or undefined when its redirect_uri is one the provider may send
// the user to: with --redirect-uri, only one of those, exactly as
// registered (not normalized, not a prefix). Checked before the library
// builds its redirect, so that neither a code nor an error goes to a
// callback nobody registered.
function redirectRefusal(params) {
  if (redirectURIs.length === 0) return undefined;
  const given = params.getAll("redirect_uri");
  if (given.length === 1 && redirectURIs.includes(given[0])) return undefined;
  return `redirect_uri ${JSON.stringify(given.join(" "))} is not registered for client ${JSON.stringify(onlyClient)}`;
}

// Authorization requests by the code they were answered with: what the
// token request must match, and the scope its token carries.
const codes = new Map();
// With --redirect-uri, redirectRefusal has already answered every request
// whose redirect_uri is not registered: each redirect built here, a code
// or an error, goes to a registered callback.
service.on(Events.BeforeAuthorizeRedirect, (redirect, req) => {
  const q = req.query ?? {};
  const known = q.client_id === onlyClient || registered.has(q.client_id);
  if ((onlyClient || registration) && (!known || (registered.has(q.client_id) && !registered.get(q.client_id).includes(q.redirect_uri)))) {
    for (const k of [...redirect.url.searchParams.keys()]) if (k !== "state") redirect.url.searchParams.delete(k);
    redirect.url.searchParams.set("error", "unauthorized_client");
    return;
  }
  if (refuseResource && q.resource !== undefined) {
    for (const k of [...redirect.url.searchParams.keys()]) if (k !== "state") redirect.url.searchParams.delete(k);
    redirect.url.searchParams.set("error", "invalid_target");
    redirect.url.searchParams.set("error_description", aadsts9010010);
    return;
  }
  if (profile === "entra" && q.resource !== undefined && (q.scope ?? "").split(" ").some((sc) => sc && !sc.startsWith(`${q.resource}/`))) {
    for (const k of [...redirect.url.searchParams.keys()]) if (k !== "state") redirect.url.searchParams.delete(k);
    redirect.url.searchParams.set("error", "invalid_request");
    redirect.url.searchParams.set("error_description", aadsts9010010);
    return;
  }
  const code = redirect.url.searchParams.get("code");
  if (code) {
    const challenge = q.code_challenge ? { value: q.code_challenge, method: q.code_challenge_method ?? "plain" } : undefined;
    codes.set(code, { clientID: q.client_id, redirectURI: q.redirect_uri, scope: q.scope, challenge });
  }
});

// RFC 7636 4.1: 43 to 128 unreserved characters.
const verifierShape = /^[A-Za-z0-9\-._~]{43,128}$/;

// Why a token request for the authorization code grant is refused, or
// undefined when it matches its authorization request: the code is
// known and unused, the client and redirect_uri are its request's, and
// the code_verifier derives its code_challenge (RFC 7636 4.6). A request
// without a challenge takes no verifier (a verifier there is a PKCE
// downgrade, RFC 9700 2.1.1).
function codeRefusal(req, rec) {
  const body = req.body ?? {};
  if (!rec) return "unknown or used code";
  if (clientID(req) !== rec.clientID) return "the code was issued to another client";
  if (body.redirect_uri !== rec.redirectURI) return "redirect_uri differs from the authorization request's";
  const verifier = body.code_verifier;
  if (!rec.challenge) return verifier === undefined ? undefined : "code_verifier for a code issued without a code_challenge";
  if (verifier === undefined) return "code_verifier missing";
  if (typeof verifier !== "string" || !verifierShape.test(verifier)) return "code_verifier is not 43 to 128 unreserved characters";
  const derived = rec.challenge.method === "S256" ? createHash("sha256").update(verifier, "ascii").digest("base64url") : verifier;
  if (derived !== rec.challenge.value) return "code_verifier does not match the code_challenge";
  return undefined;
}

// The body of a token request, parsed as the library parses it.
function parseTokenBody(type, raw) {
  if (type.includes("application/x-www-form-urlencoded")) {
    const out = {};
    for (const [k, v] of new URLSearchParams(raw)) out[k] = k in out ? [].concat(out[k], v) : v;
    return out;
  }
  if (type.includes("application/json")) {
    try {
      const v = JSON.parse(raw);
      return v && typeof v === "object" && !Array.isArray(v) ? v : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

// A token request is judged here, before the library sees it, so that a
// refusal is the provider's (400 invalid_grant or invalid_target, JSON)
// and a code is spent in the same turn it is checked: two requests with
// one code cannot both pass. It answers the refusal and returns
// undefined, or returns the request to hand on to the library: the body
// again as a stream, the code's record on it (codeRecord), and without
// code_verifier, which was checked here and which the library would
// check again its own way.
async function judgeToken(req, res) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const raw = Buffer.concat(chunks).toString("utf8");
  const type = req.headers["content-type"] ?? "";
  const body = parseTokenBody(type, raw);
  let forward = raw;
  let rec;
  if (body) {
    if (refuseResource && body.resource !== undefined) {
      json(res, 400, { error: "invalid_target", error_description: aadsts9010010 });
      return undefined;
    }
    if (body.grant_type === "authorization_code") {
      rec = typeof body.code === "string" ? codes.get(body.code) : undefined;
      const refused = codeRefusal({ headers: req.headers, body }, rec);
      if (refused !== undefined) {
        json(res, 400, { error: "invalid_grant", error_description: refused });
        return undefined;
      }
      codes.delete(body.code); // single use
      if (body.code_verifier !== undefined) {
        if (type.includes("application/json")) {
          delete body.code_verifier;
          forward = JSON.stringify(body);
        } else {
          const form = new URLSearchParams(raw);
          form.delete("code_verifier");
          forward = form.toString();
        }
      }
    }
  }
  const headers = { ...req.headers, "content-length": String(Buffer.byteLength(forward)) };
  return Object.assign(Readable.from([Buffer.from(forward)]), { headers, method: req.method, url: req.url, socket: req.socket, codeRecord: rec });
}

service.on(Events.BeforeTokenSigning, (token, req) => {
  const body = req.body ?? {};
  const p = token.payload;
  token.header.typ = "at+jwt";
  p.jti = randomUUID();
  delete p.aud;
  if (body.resource !== undefined) p.aud = body.resource;
  if (body.grant_type === "authorization_code") {
    const rec = req.codeRecord;
    if (rec) {
      p.sub = "user-1";
      p.client_id = rec.clientID;
      if (rec.scope !== undefined) p.scope = rec.scope;
    }
  }
  if (profile === "cognito") {
    delete p.aud;
    p.token_use = "access";
  }
  if (profile === "entra") {
    p.aud = entraAudience;
    p.azp = p.client_id;
    delete p.client_id;
    if (p.scope !== undefined) {
      p.scp = p.scope.split(" ").map((sc) => (appIDURI && sc.startsWith(`${appIDURI}/`) ? sc.slice(appIDURI.length + 1) : sc)).join(" ");
      delete p.scope;
    }
  }
  if (body.grant_type === "client_credentials") {
    const id = clientID(req);
    if (id !== undefined) {
      p.sub = id;
      p.client_id = id;
    }
  }
  if (p.scope === undefined) delete p.scope;
  const t = now();
  switch (body.mock_variant) {
    case "expired":
      Object.assign(p, { iat: t - 3600, nbf: t - 3600, exp: t - 1800 });
      break;
    case "not-yet-valid":
      Object.assign(p, { iat: t, nbf: t + 1800, exp: t + 3600 });
      break;
    case "other-issuer":
      p.iss = `${issuer.url}/other`;
      break;
    case "no-sub":
      delete p.sub;
      break;
  }
});

// Variants that need another signature than the library's.
service.on(Events.BeforeResponse, (res, req) => {
  if (req.body?.grant_type === "authorization_code") {
    const rec = req.codeRecord;
    if (res.body && typeof res.body === "object") {
      if (rec?.scope !== undefined) res.body.scope = rec.scope;
      else delete res.body.scope;
    }
  }
  const variant = req.body?.mock_variant;
  const token = res.body?.access_token;
  if (typeof token !== "string" || variant === undefined) return;
  const [h, p] = token.split(".");
  const header = JSON.parse(Buffer.from(h, "base64url").toString("utf8"));
  const rs256 = (hdr, jwk) => {
    const input = `${b64url(hdr)}.${p}`;
    return `${input}.${sign("sha256", Buffer.from(input), createPrivateKey({ key: jwk, format: "jwk" })).toString("base64url")}`;
  };
  switch (variant) {
    case "bad-signature":
      res.body.access_token = rs256(header, state.unpublished);
      break;
    case "unknown-kid":
      res.body.access_token = rs256({ ...header, kid: state.unpublished.kid }, state.unpublished);
      break;
    case "alg-none":
      res.body.access_token = `${b64url({ typ: header.typ, alg: "none" })}.${p}.`;
      break;
    case "hs256-pubkey": {
      const jwk = state.published.find((k) => k.kid === header.kid);
      const pem = createPublicKey({ key: jwk, format: "jwk" }).export({ type: "spki", format: "pem" });
      const input = `${b64url({ ...header, alg: "HS256" })}.${p}`;
      res.body.access_token = `${input}.${createHmac("sha256", pem).update(input).digest("base64url")}`;
      break;
    }
    case "expired":
    case "not-yet-valid":
    case "other-issuer":
    case "no-sub":
      break;
    default:
      res.statusCode = 400;
      res.body = { error: "invalid_request", error_description: `unknown mock_variant ${variant}` };
  }
});

const stats = {};
let outage = false;

function json(res, status, body) {
  const s = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(s) });
  res.end(s);
}

const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  const path = url.pathname;
  // The path as the library routes it: without a trailing slash.
  const normalized = path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  stats[path] = (stats[path] ?? 0) + 1;
  try {
    if (path === "/_mock/stats" && req.method === "GET") return json(res, 200, stats);
    if (path === "/_mock/rotate" && req.method === "POST") {
      const k = newKey(`k${state.published.length + 1}-${randomUUID().slice(0, 8)}`);
      state.published.push(k);
      await issuer.keys.add(k);
      signingKid = k.kid;
      if (stateFile) writeFileSync(stateFile, JSON.stringify(state), { mode: 0o600 });
      return json(res, 200, { kid: k.kid });
    }
    if (path === "/_mock/outage" && req.method === "POST") {
      outage = url.searchParams.get("on") === "1";
      return json(res, 200, { outage });
    }
    if (outage && (path === "/jwks" || path.startsWith("/.well-known/"))) {
      return json(res, 503, { error: "temporarily_unavailable" });
    }
    if (registration && path === "/register" && req.method === "POST") {
      let raw = "";
      for await (const chunk of req) raw += chunk;
      let md;
      try {
        md = JSON.parse(raw);
      } catch {
        return json(res, 400, { error: "invalid_client_metadata" });
      }
      if (!Array.isArray(md?.redirect_uris) || md.redirect_uris.length === 0) return json(res, 400, { error: "invalid_redirect_uri" });
      const id = `dyn-${randomUUID()}`;
      registered.set(id, md.redirect_uris);
      return json(res, 201, { client_id: id, redirect_uris: md.redirect_uris, token_endpoint_auth_method: "none",
        grant_types: md.grant_types ?? ["authorization_code"], response_types: md.response_types ?? ["code"] });
    }
    if (registration && path.startsWith("/.well-known/")) {
      // The library's metadata, with the registration endpoint added.
      const end = res.end.bind(res);
      res.end = (chunk, ...rest) => {
        try {
          const doc = JSON.parse(String(chunk));
          doc.registration_endpoint = `${issuer.url}/register`;
          chunk = JSON.stringify(doc);
          res.setHeader("Content-Length", Buffer.byteLength(chunk));
        } catch {
          // not a JSON document: as it is
        }
        return end(chunk, ...rest);
      };
    }
    if (normalized === "/authorize" && req.method === "GET") {
      const refused = redirectRefusal(url.searchParams);
      if (refused !== undefined) return json(res, 400, { error: "redirect_mismatch", error_description: refused });
    }
    if (normalized === "/token" && req.method === "POST") {
      const forward = await judgeToken(req, res);
      if (forward === undefined) return;
      return service.requestHandler(forward, res);
    }
    service.requestHandler(req, res);
  } catch (err) {
    json(res, 500, { error: String(err) });
  }
});

server.listen(port, "127.0.0.1", () => {
  const { port: chosen } = server.address();
  issuer.url = `http://127.0.0.1:${chosen}`;
  process.stdout.write(`${JSON.stringify({ issuer: issuer.url, port: chosen, kid: signingKid })}\n`);
});
server.on("error", (err) => {
  console.error(`oauth-server: ${err.message}`);
  process.exit(1);
});
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => server.close(() => process.exit(0)).closeAllConnections());
}
