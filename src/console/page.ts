/**
 * The console's one HTML page: a shell the modules fill in. `assetBase` is
 * relative to the page's own path, so it resolves under whatever prefix the
 * page was reached by (the harness port, or the front door).
 */
export function consolePage (assetBase: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Runs · evidence-gateway console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assetBase}console.css">
<script type="module" src="${assetBase}main.js"></script>
</head>
<body>
<header class="bar">
  <a class="brand" id="home" href="#">Runs console</a>
  <span id="conn" class="conn" data-state="connecting">connecting…</span>
  <span class="spacer"></span>
  <button id="auth" type="button" class="ghost">Token</button>
</header>
<section id="ingest" class="ingest" aria-label="Ingest"></section>
<main id="main"></main>
<dialog id="login">
  <form id="login-form" method="dialog">
    <h2>Harness token</h2>
    <p id="login-why" class="muted"></p>
    <label>Bearer token <textarea id="login-token" rows="4" required spellcheck="false"></textarea></label>
    <label id="login-tenant-label">Tenant (X-Svc-Tenant-Client-Id) <input id="login-tenant" spellcheck="false"></label>
    <p class="muted">Kept in this tab only (session storage).</p>
    <div class="row"><button type="submit">Use token</button></div>
  </form>
</dialog>
<noscript>The console needs JavaScript.</noscript>
</body>
</html>
`
}
