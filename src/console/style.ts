/** The console's style sheet, served as `assets/console.css` (kept here so the build has nothing to copy). */
export const CONSOLE_CSS = `
:root { color-scheme: light dark; --bg: #f6f7f9; --panel: #fff; --ink: #1c2330; --muted: #6b7385; --line: #e2e5ea; --accent: #2f6fed;
  --queued: #8a6d00; --running: #1f6feb; --succeeded: #1a7f37; --failed: #cf222e; --cancelled: #6e7781; }
@media (prefers-color-scheme: dark) { :root { --bg: #0f1217; --panel: #171b22; --ink: #e6e9ef; --muted: #8b93a5; --line: #2a303b; --accent: #5b8cff;
  --queued: #d4a72c; --running: #58a6ff; --succeeded: #3fb950; --failed: #f85149; --cancelled: #8b949e; } }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--ink); }
a { color: var(--accent); text-decoration: none; }
.mono, code, textarea.mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.spacer { flex: 1; }
.bar { display: flex; align-items: center; gap: 14px; padding: 10px 20px; background: var(--panel); border-bottom: 1px solid var(--line); position: sticky; top: 0; z-index: 2; }
.brand { font-weight: 650; color: var(--ink); font-size: 15px; }
.conn { font-size: 12px; padding: 2px 10px; border-radius: 999px; border: 1px solid var(--line); color: var(--muted); }
.conn::before { content: ""; display: inline-block; width: 8px; height: 8px; border-radius: 50%; margin-right: 6px; background: var(--muted); vertical-align: 0; }
.conn[data-state=live]::before { background: var(--succeeded); }
.conn[data-state=reconnecting] { color: var(--queued); border-color: var(--queued); }
.conn[data-state=reconnecting]::before { background: var(--queued); }
.conn[data-state=offline] { color: var(--failed); border-color: var(--failed); }
.conn[data-state=offline]::before { background: var(--failed); }
button { font: inherit; padding: 6px 14px; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.ghost { background: transparent; color: var(--ink); border-color: var(--line); }
button.danger { background: transparent; color: var(--failed); border-color: var(--failed); }
button:disabled { opacity: .45; cursor: default; }
input, select, textarea { font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; width: 100%; }
label { display: flex; flex-direction: column; gap: 4px; font-size: 12px; color: var(--muted); }
.ingest { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 12px; padding: 14px 20px 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; display: grid; grid-template-columns: 1fr auto; grid-template-rows: auto 34px; gap: 2px 10px; }
.card .label { color: var(--muted); font-size: 12px; }
.card .value { font-size: 18px; font-weight: 600; text-align: right; grid-row: span 1; }
.card .spark { grid-column: 1 / span 2; width: 100%; height: 34px; }
.card .line { fill: none; stroke: var(--accent); stroke-width: 1.5; vector-effect: non-scaling-stroke; }
.ingest[data-state=unavailable] .value { color: var(--muted); }
main { padding: 14px 20px 24px; display: flex; flex-direction: column; gap: 14px; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
.panel h2 { font-size: 14px; margin: 0; }
.panel-head { display: flex; align-items: center; gap: 12px; margin-bottom: 8px; flex-wrap: wrap; }
.start .grid { display: grid; grid-template-columns: 2fr 1fr 1fr; gap: 10px; margin: 8px 0; }
.start .grid .wide:first-child { grid-column: 1; grid-row: span 2; }
.start .grid .wide:last-child { grid-column: 2 / span 2; }
.row { display: flex; align-items: center; gap: 12px; }
.note { color: var(--muted); font-size: 12.5px; }
.filters { display: flex; gap: 6px; flex-wrap: wrap; }
.chip { flex-direction: row; align-items: center; gap: 5px; border: 1px solid var(--line); border-radius: 999px; padding: 2px 10px 2px 6px; color: var(--ink); cursor: pointer; }
.chip input { width: auto; margin: 0; }
.thead, .row-grid, a.row { display: grid; grid-template-columns: 100px 330px 70px minmax(0, 1fr) 100px 80px; gap: 10px; align-items: center; }
.thead { font-size: 11.5px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); padding: 6px 8px; border-bottom: 1px solid var(--line); }
.vlist { position: relative; height: calc(100vh - 420px); min-height: 260px; overflow-y: auto; }
.spacer-rows { width: 1px; }
.rows { position: absolute; top: 0; left: 0; right: 0; }
a.row { height: 36px; padding: 0 8px; color: var(--ink); border-bottom: 1px solid var(--line); }
a.row:hover { background: var(--bg); }
a.row > span { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.badge { display: inline-block; font-size: 11.5px; font-weight: 600; padding: 1px 8px; border-radius: 999px; border: 1px solid currentColor; }
.status-queued { color: var(--queued); } .status-running { color: var(--running); } .status-succeeded { color: var(--succeeded); }
.status-failed { color: var(--failed); } .status-cancelled { color: var(--cancelled); }
.fields { display: grid; grid-template-columns: 110px 1fr; gap: 4px 12px; margin: 0; }
.fields dt { color: var(--muted); } .fields dd { margin: 0; }
.pre { white-space: pre-wrap; word-break: break-word; }
.error { color: var(--failed); }
.timeline { list-style: none; margin: 0; padding: 0; }
.event { display: grid; grid-template-columns: 50px 100px 140px minmax(120px, 1fr) minmax(0, 2fr); gap: 10px; padding: 5px 4px; border-bottom: 1px solid var(--line); align-items: baseline; }
.event .seq { color: var(--muted); } .event .type { font-weight: 600; }
.event.type-run-completed .type { color: var(--succeeded); } .event.type-run-failed .type { color: var(--failed); }
.event.type-run-queued .type, .event.type-run-started .type { color: var(--running); }
.event .data { color: var(--muted); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
dialog { border: 1px solid var(--line); border-radius: 10px; background: var(--panel); color: var(--ink); width: min(520px, 92vw); }
dialog form { display: flex; flex-direction: column; gap: 10px; }
dialog h2 { margin: 0; font-size: 16px; }
dialog::backdrop { background: rgba(0, 0, 0, .45); }
`
