// Checks run in the page: names for every control, one h1, unique ids, text contrast (WCAG AA).
() => {
  const problems = [];
  const visible = (el) => {
    const style = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    return style.visibility !== "hidden" && style.display !== "none" && box.width > 0 && box.height > 0;
  };
  const describe = (el) => `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.name ? "[name=" + el.name + "]" : ""} "${(el.textContent || "").trim().slice(0, 40)}"`;

  if (!document.documentElement.lang) problems.push("html has no lang");
  const h1s = [...document.querySelectorAll("h1")].filter(visible);
  if (h1s.length !== 1) problems.push(`expected one h1, found ${h1s.length}`);

  const ids = new Map();
  for (const el of document.querySelectorAll("[id]")) ids.set(el.id, (ids.get(el.id) || 0) + 1);
  for (const [id, n] of ids) if (n > 1) problems.push(`id ${id} used ${n} times`);

  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden" || !visible(el)) continue;
    const named = (el.labels && el.labels.length) || el.getAttribute("aria-label") || el.getAttribute("aria-labelledby");
    if (!named) problems.push(`unlabelled control ${describe(el)}`);
  }
  for (const el of document.querySelectorAll("button, a[href]")) {
    if (!visible(el)) continue;
    if (!(el.textContent.trim() || el.getAttribute("aria-label"))) problems.push(`nameless ${describe(el)}`);
  }

  const rgb = (text) => {
    const m = text.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const [r, g, b, a = 1] = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    return { r, g, b, a };
  };
  const lum = ({ r, g, b }) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const c = rgb(getComputedStyle(node).backgroundColor);
      if (c && c.a > 0.5) return c;
    }
    return { r: 255, g: 255, b: 255, a: 1 };
  };
  for (const el of document.querySelectorAll("body *")) {
    if (!visible(el)) continue;
    const hasText = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!hasText) continue;
    const style = getComputedStyle(el);
    const fg = rgb(style.color);
    const bg = background(el);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) problems.push(`contrast ${ratio.toFixed(2)} for ${describe(el)}`);
  }
  return problems;
}
