/**
 * The console's stylesheet and its one script, served from /admin/assets (nothing from a CDN: it works
 * offline and the CSP allows 'self' only). The script does one thing a page cannot do without it: copy a
 * secret shown once to the clipboard. Everything else is plain forms, so the console works without it.
 */
export const CONSOLE_CSS = `
:root { color-scheme: light; --ink: #1b1f24; --muted: #57606a; --line: #d0d7de; --accent: #0b5cad; --bad: #a40e26; --ok: #116329; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: var(--ink); background: #f6f8fa; }
a { color: var(--accent); }
.skip { position: absolute; left: -9999px; } .skip:focus { left: 1rem; top: 1rem; background: #fff; padding: .5rem; z-index: 1; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 1rem; padding: .75rem 1.5rem; background: #fff; border-bottom: 1px solid var(--line); }
header .brand { font-weight: 700; margin-right: auto; }
nav ul { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; margin: 0; padding: 0; }
nav a[aria-current="page"] { font-weight: 700; color: var(--ink); }
main { max-width: 72rem; margin: 0 auto; padding: 1.5rem; }
section, form.card, .card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 1rem 1.25rem; margin: 0 0 1.25rem; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; } h2 { font-size: 1.15rem; margin: 0 0 .75rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
label { display: block; font-weight: 600; margin: .75rem 0 .25rem; }
fieldset { border: 1px solid var(--line); border-radius: 6px; margin: .75rem 0; padding: .5rem 1rem; }
legend { font-weight: 600; padding: 0 .25rem; }
fieldset label { display: inline-flex; gap: .4rem; align-items: center; font-weight: 400; margin: .25rem 1rem .25rem 0; }
input[type=text], input[type=email], input[type=password], input[type=url], select { font: inherit; padding: .4rem .5rem; border: 1px solid #8c959f; border-radius: 4px; min-width: 18rem; max-width: 100%; }
button, .button { font: inherit; display: inline-block; padding: .4rem .9rem; border-radius: 4px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; margin-top: .75rem; }
button.secondary, .button.secondary { background: #fff; color: var(--accent); }
button.danger, .button.danger { background: var(--bad); border-color: var(--bad); color: #fff; }
td button, td .button, header button { margin-top: 0; }
:focus-visible { outline: 3px solid #f5a623; outline-offset: 2px; }
.hint { color: var(--muted); font-size: .875rem; margin: .25rem 0 0; }
.error { color: var(--bad); font-weight: 600; margin: .25rem 0 0; }
.notice { border-left: 4px solid var(--ok); background: #fff; padding: .75rem 1rem; margin: 0 0 1.25rem; }
.alert { border-left: 4px solid var(--bad); background: #fff; padding: .75rem 1rem; margin: 0 0 1.25rem; }
.secret { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.secret code { font-size: 1rem; padding: .4rem .6rem; background: #eef1f4; border-radius: 4px; word-break: break-all; }
.secret button { margin-top: 0; }
dt { font-weight: 600; } dd { margin: 0 0 .5rem 0; }
pre { background: #eef1f4; padding: .75rem; overflow: auto; font-size: .85rem; }
.inline { display: inline; }
/* A viewer (Roles.ts) changes nothing: the forms that post and the links styled as buttons (each leads to a
   change) are not shown; the server refuses their posts whatever the page shows. */
.read-only main form[method="post"], .read-only main a.button { display: none; }
input[type=date] { font: inherit; padding: .35rem .5rem; border: 1px solid #8c959f; border-radius: 4px; }
.filters { display: flex; flex-wrap: wrap; gap: 0 1rem; align-items: flex-start; }
.filters .filter { flex: 1 1 12rem; min-width: 0; }
.filters input[type=text], .filters select { min-width: 0; width: 100%; }
.pages { display: flex; gap: 1rem; margin: .75rem 0 0; }
pre { white-space: pre-wrap; word-break: break-word; }
/* Usage's chart (inline SVG: colours from here, since the CSP allows no style attribute). */
.chart { display: block; margin: 0 0 1rem; font-size: .9rem; }
.chart-label { fill: var(--ink); font-weight: 600; } .chart-value { fill: var(--muted); }
.chart-track { fill: #eef1f4; stroke: var(--line); } .chart-bar { fill: var(--accent); } .chart-bar-high { fill: var(--bad); }
caption { text-align: left; font-weight: 600; padding: 0 0 .4rem; }
/* Tables fit a 1280 px window: long values (ids, URLs, numbers) wrap inside their cell. */
td, th { overflow-wrap: anywhere; }
/* At a phone's width each row becomes a card, each cell a line led by its column's name (data-label, added
   by ResponsiveTables when the page is sent): nothing scrolls sideways. */
@media (max-width: 40rem) {
  main { padding: 1rem .75rem; }
  section, form.card, .card { padding: .75rem; }
  table, tbody, tfoot, tr, td, tbody th, tfoot th { display: block; width: 100%; }
  thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
  tr { border-bottom: 1px solid var(--line); padding: .4rem 0; }
  td, tbody th, tfoot th { border: 0; padding: .15rem 0; }
  td[data-label]::before, th[data-label]::before { content: attr(data-label) ": "; font-weight: 600; color: var(--muted); }
  input[type=text], input[type=email], input[type=password], input[type=url], select { min-width: 0; width: 100%; }
  header { padding: .75rem; }
}
`

export const CONSOLE_JS = `"use strict";
document.addEventListener("click", function (event) {
  var button = event.target instanceof Element ? event.target.closest("button[data-copy]") : null;
  if (!button) return;
  var source = document.getElementById(button.getAttribute("data-copy"));
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent || "").then(function () {
    var status = document.getElementById(button.getAttribute("data-copy") + "-status");
    if (status) status.textContent = "Copied.";
  });
});
`
