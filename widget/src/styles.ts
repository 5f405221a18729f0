/**
 * The widget's whole stylesheet, inside its shadow root: the host page's rules cannot reach in and
 * these cannot leak out. `:host { all: initial }` also stops inherited properties (fonts, colours,
 * line height) flowing in from the page. `--accent` is the channel's colour.
 */
export const css = `
:host { all: initial; }
* { box-sizing: border-box; }
.root { --accent: #1f6feb; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2330; }
button, input, textarea { font: inherit; color: inherit; }
button { cursor: pointer; }
:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.launcher { position: fixed; right: 20px; bottom: 20px; width: 56px; height: 56px; border-radius: 50%; border: 0;
  background: var(--accent); color: #fff; box-shadow: 0 4px 14px rgba(0,0,0,.25); display: grid; place-items: center; }
.launcher svg { width: 28px; height: 28px; fill: currentColor; }
.badge { position: absolute; top: -4px; right: -4px; min-width: 22px; height: 22px; padding: 0 6px; border-radius: 11px;
  background: #d1242f; color: #fff; font-size: 12px; font-weight: 700; line-height: 22px; text-align: center; }
.panel { position: fixed; right: 20px; bottom: 88px; width: 360px; max-width: calc(100vw - 40px); height: 540px;
  max-height: calc(100vh - 110px); background: #fff; border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25);
  display: flex; flex-direction: column; overflow: hidden; }
.panel[hidden], [hidden] { display: none !important; }
header { background: var(--accent); color: #fff; padding: 14px 16px; display: flex; align-items: flex-start; gap: 8px; }
header div { flex: 1; }
h2 { margin: 0; font-size: 16px; }
.status { margin: 2px 0 0; font-size: 12px; opacity: .9; }
.close { background: transparent; border: 0; color: #fff; font-size: 22px; line-height: 1; padding: 2px 6px; }
.body { flex: 1; overflow-y: auto; padding: 12px; background: #f6f8fa; }
.greeting { margin: 0 0 10px; padding: 10px 12px; background: #fff; border-radius: 10px; }
ol { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column; gap: 6px; }
li { max-width: 80%; padding: 8px 11px; border-radius: 12px; background: #fff; white-space: pre-wrap; overflow-wrap: anywhere; }
li.GUEST { align-self: flex-end; background: var(--accent); color: #fff; }
li.SYSTEM { align-self: center; background: transparent; color: #57606a; font-size: 12px; }
li .who { display: block; font-size: 11px; opacity: .75; margin-bottom: 2px; }
li.pending { opacity: .6; }
li.failed { outline: 2px solid #d1242f; }
li .file { display: block; margin-top: 4px; color: inherit; text-decoration: underline; background: none; border: 0; padding: 0; text-align: left; }
li img { display: block; max-width: 100%; max-height: 180px; margin-top: 4px; border-radius: 6px; }
.retry { margin-left: 6px; background: none; border: 0; color: inherit; text-decoration: underline; padding: 0; }
.note { margin: 8px 0 0; font-size: 12px; color: #57606a; text-align: center; }
.queue { margin: 8px 0 0; padding: 6px 8px; border-radius: 6px; background: #f6f8fa; font-size: 13px; color: #24292f; text-align: center; }
form { margin: 0; }
.composer { border-top: 1px solid #d0d7de; padding: 8px; display: flex; gap: 6px; align-items: flex-end; background: #fff; }
.composer.drop { outline: 3px dashed var(--accent); outline-offset: -4px; }
textarea { flex: 1; resize: none; border: 1px solid #d0d7de; border-radius: 8px; padding: 7px 9px; min-height: 38px; max-height: 120px; }
.icon { background: none; border: 0; padding: 6px; color: #57606a; line-height: 0; }
.icon svg { width: 22px; height: 22px; fill: currentColor; }
.send { background: var(--accent); color: #fff; border: 0; border-radius: 8px; padding: 8px 12px; font-weight: 600; }
.send:disabled { opacity: .5; cursor: default; }
.uploads { padding: 0 8px; background: #fff; }
.upload { display: flex; align-items: center; gap: 8px; font-size: 12px; padding: 4px 0; }
.upload span { flex: 1; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.upload progress { width: 90px; }
.upload.error { color: #d1242f; }
.card { background: #fff; border-radius: 10px; padding: 12px; margin-top: 10px; }
.card p { margin: 0 0 8px; }
.card label { display: block; font-size: 12px; margin: 8px 0 4px; }
.card input, .card textarea { width: 100%; border: 1px solid #d0d7de; border-radius: 8px; padding: 7px 9px; }
.stars { display: flex; gap: 4px; }
.stars button { border: 1px solid #d0d7de; background: #fff; border-radius: 8px; padding: 4px 8px; font-size: 18px; }
.stars button[aria-pressed="true"] { background: var(--accent); color: #fff; border-color: var(--accent); }
.card .send { margin-top: 8px; }
.error { color: #d1242f; font-size: 12px; }
`
