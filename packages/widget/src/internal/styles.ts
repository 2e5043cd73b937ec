/**
 * The widget's shadow stylesheet. Colours and font come from the page's custom properties
 * (`--streak-accent`, `--streak-bg`, `--streak-fg`, `--streak-font`); the built-in themes
 * (`data-theme` "default" and "dark") only change their fallbacks.
 */
export const css = `
:host{all:initial;display:block;position:fixed;z-index:2147483000;right:16px;bottom:16px;
--a:var(--streak-accent,#c2410c);--b:var(--streak-bg,#fff);--f:var(--streak-fg,#1f2328);
--n:var(--streak-font,system-ui,-apple-system,"Segoe UI",Roboto,sans-serif)}
:host([data-theme=dark]){--a:var(--streak-accent,#fb923c);--b:var(--streak-bg,#1c1f24);--f:var(--streak-fg,#f1f3f5)}
:host(:not([data-state=ready])){display:none}
:host([data-position^=top]){top:16px;bottom:auto}
:host([data-position$=left]){left:16px;right:auto}
:host([inline]){position:static;z-index:auto}
section{box-sizing:border-box;width:17.5rem;padding:14px 16px;border-radius:14px;background:var(--b);color:var(--f);
font:14px/1.4 var(--n);border:1px solid rgb(127 127 127/.3);box-shadow:0 6px 20px rgb(0 0 0/.15);animation:in .25s ease-out}
:host([inline]) section{box-shadow:none}
.top{display:flex;align-items:flex-start;justify-content:space-between;gap:8px}
p{margin:0}
.cap{display:block;font-size:12px;font-weight:600;letter-spacing:.05em;text-transform:uppercase}
[part=count]{font-size:30px;font-weight:700;line-height:1.1;color:var(--a)}
.unit{font-size:16px;font-weight:600}
svg{width:22px;height:22px;fill:var(--a);vertical-align:-2px}
.today{font-size:12px}
button{font:inherit;font-size:13px;color:inherit;background:none;border:1px solid currentColor;border-radius:999px;
padding:4px 10px;cursor:pointer}
button:focus-visible{outline:2px solid var(--a);outline-offset:2px}
button::after{content:"";display:inline-block;width:5px;height:5px;margin-left:7px;border:solid currentColor;
border-width:0 2px 2px 0;transform:translateY(-3px) rotate(45deg);transition:transform .2s}
[aria-expanded=true]::after{transform:translateY(0) rotate(-135deg)}
ol{display:flex;justify-content:space-between;list-style:none;margin:12px 0 10px;padding:0}
[part=day]{display:flex;flex-direction:column;align-items:center;gap:4px;font-size:11px}
.d{display:grid;place-items:center;box-sizing:border-box;width:28px;height:28px;border-radius:50%;
border:2px solid transparent;font-size:12px;font-weight:600;transition:background .2s}
[data-today=true] .d{outline:2px solid var(--f);outline-offset:2px}
[data-rest=true] .d{border:2px dashed currentColor}
[data-checked=true] .d{background:var(--a);color:var(--b)}
[data-frozen=true] .d{background:#dbeafe;color:#1e3a8a}
[data-paused=true] .d{border:2px dotted currentColor;opacity:.6}
[part=message]{font-weight:500}
[part=details]{margin-top:10px;padding-top:10px;border-top:1px solid rgb(127 127 127/.3);animation:in .2s ease-out}
[part=details] p{margin-bottom:4px}
ul{margin:2px 0 0;padding-left:20px}
code{font:12px ui-monospace,monospace;padding:1px 5px;border:1px dashed currentColor;border-radius:4px}
a{color:inherit}
.sr{position:absolute;width:1px;height:1px;margin:-1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@keyframes in{from{opacity:0;transform:translateY(6px)}}
@media (prefers-reduced-motion:reduce){*,::after{animation:none!important;transition:none!important}}
`
